#pragma once
#include <vector>

#include "cli/command.h"

namespace pw::cli {

// Every subcommand but the train commands (runtime_commands, nas_commands:
// pipewright-train's); each lives in its own cmd_*.cpp and declares its
// arguments in a define_* function (cli/command.h).
const std::vector<Command>& commands();

Action define_simulate(Args& args);
Action define_plan(Args& args);
Action define_launch(Args& args);

// Each optional layer's commands, defined in engine/cli/<layer>/.
std::vector<Command> db_commands();       // engine/cli/db/: replay, export, compare, explain
std::vector<Command> ipc_commands();      // engine/cli/ipc/: watch, keys, control
std::vector<Command> runtime_commands();  // engine/cli/runtime/: run, profile
std::vector<Command> nas_commands();      // engine/cli/nas/: search (supernet runs)

}  // namespace pw::cli
