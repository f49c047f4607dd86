// pipewright: every command that needs no libtorch (plan, simulate, replay,
// watch, ...) runs here, in milliseconds; the ones that train or measure are
// handed to pipewright-train with the same command line (cli/train_exec.h).
#include <csignal>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/dispatch.h"
#include "cli/train_exec.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto& train = pw::cli::train_commands();
  const std::string named = pw::cli::named_command(args);
  for (const auto& c : train)
    if (c.name == named) return pw::cli::exec_train(argv);
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which the
  // writers report naming the file, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<pw::cli::CommandSummary> listed;
  for (const auto& c : pw::cli::commands()) listed.push_back({c.name, c.summary});
  listed.insert(listed.end(), train.begin(), train.end());
  return pw::cli::dispatch(args, pw::cli::commands(), listed);
}
