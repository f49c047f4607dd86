#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/spec/refusal.h"
#include "core/spec/spec_error.h"

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
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "pipewright " << PW_VERSION << "\n";
    return 0;
  }
  for (const auto& c : pw::cli::commands()) {
    if (c.name != args[0]) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest)
      if (a == "--help" || a == "-h") {
        std::cout << "usage: pipewright " << c.name << " " << c.usage << "\n" << c.summary << "\n";
        return 0;
      }
    try {
      return c.run(rest);
    } catch (const pw::cli::UsageError& e) {
      std::cerr << "pipewright " << c.name << ": " << e.what() << "\nusage: pipewright " << c.name << " " << c.usage
                << "\n";
      return 2;
    } catch (const pw::SpecError& e) {
      std::cerr << "error: " << e.what() << "\n";
      return 2;
    } catch (const pw::cli::Interrupted& e) {
      std::cerr << "pipewright " << c.name << ": " << e.what() << "\n";
      return 128 + e.signal;
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      return pw::is_refusal(e) ? 2 : 1;
    }
  }
  std::cerr << "pipewright: unknown command \"" << args[0] << "\"\n";
  usage(std::cerr);
  return 2;
}
