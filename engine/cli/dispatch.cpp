#include "cli/dispatch.h"

#include <algorithm>
#include <iostream>

#include "cli/commands.h"

namespace pw::cli {
namespace {

void usage(std::ostream& out, const std::vector<CommandSummary>& listed) {
  out << "usage: pipewright <command> [arguments]\n\ncommands:\n";
  for (const auto& c : listed)
    out << "  " << c.name << std::string(12 - std::min<size_t>(11, c.name.size()), ' ') << c.summary << "\n";
  out << "\n  pipewright <command> --help   arguments of one command\n  pipewright --version\n";
}

}  // namespace

std::string named_command(const std::vector<std::string>& args) {
  // `pipewright help CMD` is `pipewright CMD --help`.
  if (args.size() == 2 && args[0] == "help") return args[1];
  if (args.empty() || args[0].starts_with("-") || args[0] == "help" || args[0] == "version") return {};
  return args[0];
}

int dispatch(const std::vector<std::string>& in, const std::vector<Command>& runnable,
             const std::vector<CommandSummary>& listed) {
  std::vector<std::string> args = in;
  if (args.size() == 2 && args[0] == "help") args = {args[1], "--help"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout, listed);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "pipewright " << PW_VERSION << "\n";
    return 0;
  }
  for (const auto& c : runnable)
    if (c.name == args[0]) return run_command(c, {args.begin() + 1, args.end()});
  std::vector<std::string> names;
  for (const auto& c : listed) names.push_back(c.name);
  std::cerr << "pipewright: unknown command \"" << args[0] << "\"";
  if (auto best = nearest(args[0], names); !best.empty()) std::cerr << "; did you mean \"" << best << "\"?";
  std::cerr << "\n\n";
  usage(std::cerr, listed);
  return 2;
}

}  // namespace pw::cli
