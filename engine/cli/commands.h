#pragma once
#include <functional>
#include <string>
#include <vector>

namespace pw::cli {

struct Command {
  std::string name;
  std::string usage;    // one line: arguments and options
  std::string summary;  // one line: what it does
  std::function<int(const std::vector<std::string>& args)> run;
};

// Every subcommand; each lives in its own cmd_*.cpp.
const std::vector<Command>& commands();

int cmd_simulate(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_launch(const std::vector<std::string>& args);

// Each optional layer's commands, defined in engine/cli/<layer>/.
std::vector<Command> db_commands();       // engine/cli/db/: replay, export, compare
std::vector<Command> ipc_commands();      // engine/cli/ipc/: watch
std::vector<Command> runtime_commands();  // engine/cli/runtime/: run, profile
std::vector<Command> nas_commands();      // engine/cli/nas/: search (supernet runs)

}  // namespace pw::cli
