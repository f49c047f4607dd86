#pragma once
// The commands' one argument parser: a thin layer over CLI11. A command
// declares its positionals and options on an `Args` (bound to variables it
// owns) and returns the action that runs once they are parsed; main.cpp
// parses, prints --help and turns parse errors into exit 2 naming the
// option. CLI11 itself is included only by command.cpp and main.cpp: its
// header is slow to compile.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pw::cli {

// Usage problems found after parsing: printed with the command's usage
// line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunOutputOptions;  // cli/run_outputs.h

class Args {
 public:
  explicit Args(CLI::App& app);

  // `names`: "--planner", or "-o,--output" with a short form. `value`: what
  // usage and --help show for the value (FILE, N, S).
  void positional(const std::string& name, std::string& into, const std::string& help, bool required = true);
  void flag(const std::string& names, bool& into, const std::string& help);
  void text(const std::string& names, std::string& into, const std::string& value, const std::string& help);
  // A file the command writes for the user (--trace FILE, -o FILE): declared
  // like text(), listed as an output. The action writes it through the output
  // rule (core/io/checked_write.h: OutputTarget{path, option, overwrite}).
  void output(const std::string& names, std::string& into, const std::string& value, const std::string& help);
  // --overwrite: let the command's outputs replace existing files (never an
  // SQLite file but through --db). Refused unless one of the outputs is given.
  void overwrite(bool& into);
  // Range-checked while parsing, in the option's own type: a value outside
  // [min, max] or not a number is a usage error naming the option.
  void integer(const std::string& names, int& into, int min, int max, const std::string& value,
               const std::string& help);
  void number(const std::string& names, double& into, double min, double max, const std::string& value,
              const std::string& help);

  // Constraints between options, checked while parsing.
  void required(const std::string& name);
  void needs(const std::string& option, const std::string& needed);
  void excludes(const std::string& a, const std::string& b);

  // Options several commands share, spelt and checked alike everywhere.
  void overrides(std::vector<std::string>& into,  // --set a.b=v, repeatable
                 const std::string& help = "override a job field by its path (the value is JSON), repeatable");
  void json(bool& into);                           // --json
  void planner(std::string& into);                 // --planner P
  void profile(std::string& into);                 // --profile FILE
  // --db RUN.sqlite [--overwrite], --listen ENDPOINT [--allow-remote --curve-dir DIR]
  void run_outputs(RunOutputOptions& into);

  // After parsing: whether the option (by any of its names) was given.
  bool given(const std::string& name) const;

  // One line: the arguments and options ("JOB.json [--json] [--set a.b=v ...]").
  std::string usage() const;
  // --help: the usage line, the summary, every argument and option.
  std::string help(const std::string& command, const std::string& summary) const;

 private:
  struct Entry {
    std::string names, value, help;
    bool positional = false, required = false, repeatable = false;
  };
  Entry& entry(const std::string& name);
  CLI::App& app_;
  std::vector<Entry> entries_;
  std::vector<std::string> outputs_;  // output(): the names --overwrite needs one of
};

// What a command does once its arguments are parsed; its exit status.
using Action = std::function<int()>;

struct Command {
  std::string name;
  std::string summary;  // one line: what it does
  // Declares the command's arguments and returns its action. The action
  // may keep a reference to `args`: it outlives the call.
  std::function<Action(Args& args)> define;
};

// Parses `argv` (the words after the command's name) for `c` and runs it:
// --help prints the command's help (exit 0); a parse or usage error prints
// it with the usage line (exit 2).
int run_command(const Command& c, const std::vector<std::string>& argv);

// The candidate nearest to `word` by edit distance, if near enough to be
// what was meant; empty otherwise.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace pw::cli
