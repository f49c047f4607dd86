#pragma once
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace pw::cli {

// Usage problems: printed with the command's usage line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parsed "pipewright <cmd> [positionals] [--flag] [--opt value] [--set k=v]...".
class CliArgs {
 public:
  // `flags` take no value; `options` take one; --set may repeat.
  CliArgs(const std::vector<std::string>& argv, const std::set<std::string>& flags,
          const std::set<std::string>& options);
  const std::vector<std::string>& positional() const { return positional_; }
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> option(const std::string& name) const;
  const std::vector<std::string>& overrides() const { return sets_; }
  // Exactly n positionals, else UsageError.
  void expect_positional(size_t n, const std::string& what) const;

 private:
  std::vector<std::string> positional_;
  std::set<std::string> flags_;
  std::map<std::string, std::string> options_;
  std::vector<std::string> sets_;
};

}  // namespace pw::cli
