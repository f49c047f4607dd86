#include "cli/cli_args.h"

namespace pw::cli {

CliArgs::CliArgs(const std::vector<std::string>& argv, const std::set<std::string>& flags,
                 const std::set<std::string>& options) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos && name.rfind("set", 0) != 0) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "set") {
      if (i + 1 >= argv.size()) throw UsageError("--set needs key.path=value");
      sets_.push_back(argv[++i]);
    } else if (flags.count(name)) {
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
      }
      options_[name] = value;
    } else {
      throw UsageError("unknown option --" + name);
    }
  }
}

std::optional<std::string> CliArgs::option(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) return std::nullopt;
  return it->second;
}

void CliArgs::expect_positional(size_t n, const std::string& what) const {
  if (positional_.size() != n)
    throw UsageError("expected " + what + ", got " + std::to_string(positional_.size()) + " argument(s)");
}

}  // namespace pw::cli
