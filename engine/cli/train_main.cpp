// pipewright-train: the whole command line, libtorch included. pipewright
// execs it for the commands that train or measure (cli/train_commands.h); run
// directly it answers every command as pipewright does.
#include <csignal>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/dispatch.h"

int main(int argc, char** argv) {
  // As in main.cpp: ulimit -f fails writes with EFBIG instead of killing us.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<pw::cli::Command> all = pw::cli::commands();
  for (auto& c : pw::cli::runtime_commands()) all.push_back(c);
#ifdef PW_HAVE_NAS_RUNTIME
  for (auto& c : pw::cli::nas_commands()) all.push_back(c);
#endif
  std::vector<pw::cli::CommandSummary> listed;
  for (const auto& c : all) listed.push_back({c.name, c.summary});
  return pw::cli::dispatch({argv + 1, argv + argc}, all, listed);
}
