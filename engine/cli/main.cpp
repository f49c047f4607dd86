#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {
void usage(std::ostream& out) {
  out << "usage: pipewright <command> [arguments]\n\ncommands:\n";
  for (const auto& c : pw::cli::commands()) out << "  " << c.name << std::string(12 - std::min<size_t>(11, c.name.size()), ' ') << c.summary << "\n";
  out << "\n  pipewright <command> --help   arguments of one command\n  pipewright --version\n";
}
}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which the
  // writers report naming the file, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  // `pipewright help CMD` is `pipewright CMD --help`.
  if (args.size() == 2 && args[0] == "help") args = {args[1], "--help"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "pipewright " << PW_VERSION << "\n";
    return 0;
  }
  std::vector<std::string> names;
  for (const auto& c : pw::cli::commands()) {
    if (c.name == args[0]) return pw::cli::run_command(c, {args.begin() + 1, args.end()});
    names.push_back(c.name);
  }
  std::cerr << "pipewright: unknown command \"" << args[0] << "\"";
  if (auto best = pw::cli::nearest(args[0], names); !best.empty()) std::cerr << "; did you mean \"" << best << "\"?";
  std::cerr << "\n\n";
  usage(std::cerr);
  return 2;
}
