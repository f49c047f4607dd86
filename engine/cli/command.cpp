#include "cli/command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/interrupt.h"
#include "cli/run_outputs.h"
#include "core/spec/refusal.h"
#include "core/spec/spec_error.h"

namespace pw::cli {
namespace {

std::string show(long long v) { return std::to_string(v); }
std::string show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The whole string as one T, or nothing: "12abc", "1e3" (for an integer),
// "" and "nan" are not numbers.
template <typename T>
bool parse_whole(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  if (ec != std::errc() || p != end) return false;
  if constexpr (std::is_floating_point_v<T>) return std::isfinite(out);
  return true;
}

// A CLI11 check run on the raw text before conversion, so every bad value
// gets the same message: "--threads: must be an integer in [1, 1024], got "0"".
template <typename T>
CLI::Validator in_range(T min, T max) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        T v{};
        if (parse_whole(s, v) && v >= min && v <= max) return {};
        return std::string("must be ") + (std::is_integral_v<T> ? "an integer" : "a number") + " in [" + show(min) +
               ", " + show(max) + "], got \"" + s + "\"";
      },
      "");
}

// Optimal string alignment distance (insertions, deletions, substitutions,
// adjacent transpositions): "--jsno" is one step from "--json".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = names.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(names.substr(start, comma - start));
  out.push_back(names.substr(start));
  return out;
}

// How usage and --help show an option's names: the short form first.
std::string display_names(const std::string& names) {
  std::string out;
  for (const auto& n : split_names(names)) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// An unexpected word left over after parsing, as a message; unknown
// options get the nearest known option as a suggestion.
std::string unexpected(const std::string& word, const CLI::App& app) {
  if (word.size() < 2 || word[0] != '-')
    return "unexpected argument \"" + word + "\"";
  const std::string name = word.substr(0, word.find('='));
  std::vector<std::string> known;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) known.push_back("--" + l);
    for (const auto& s : o->get_snames()) known.push_back("-" + s);
  }
  std::string msg = "unknown option " + name;
  if (auto best = nearest(name, known); !best.empty()) msg += "; did you mean " + best + "?";
  return msg;
}

// CLI11's messages, reworded where ours said it better before.
std::string parse_message(const CLI::ParseError& e, const CLI::App& app) {
  std::string what = e.what();
  if (e.get_name() == "ArgumentMismatch") {
    // "--set: 1 required a.b=v missing"
    std::string name = what.substr(0, what.find(':'));
    if (const CLI::Option* o = app.get_option_no_throw(name); o && what.find("missing") != std::string::npos)
      return name + " needs a value (" + o->get_type_name() + ")";
  }
  return what;
}

}  // namespace

Args::Args(CLI::App& app) : app_(app) {
  // Unknown words are collected and reported by run_command, with a
  // suggestion; a repeated option keeps its last value, as before.
  app_.allow_extras(true);
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_.set_help_flag("-h,--help", "this help");
}

Args::Entry& Args::entry(const std::string& name) {
  for (auto& e : entries_)
    for (const auto& n : split_names(e.names))
      if (n == name) return e;
  throw std::logic_error("no argument " + name + " declared");
}

void Args::positional(const std::string& name, std::string& into, const std::string& help, bool required) {
  auto* o = app_.add_option(name, into, help);
  if (required) o->required();
  entries_.push_back({name, "", help, true, required, false});
}

void Args::flag(const std::string& names, bool& into, const std::string& help) {
  app_.add_flag(names, into, help);
  entries_.push_back({names, "", help});
}

void Args::text(const std::string& names, std::string& into, const std::string& value, const std::string& help) {
  app_.add_option(names, into, help)->type_name(value);
  entries_.push_back({names, value, help});
}

void Args::output(const std::string& names, std::string& into, const std::string& value, const std::string& help) {
  text(names, into, value, help);
  outputs_.push_back(split_names(names).back());
}

void Args::overwrite(bool& into) {
  flag("--overwrite", into, "replace existing output files (a run database only through --db; never another SQLite file)");
  // After parsing, once every output is declared: --overwrite alone is a mistake.
  app_.final_callback([this] {
    if (!given("--overwrite") || outputs_.empty()) return;
    std::string names;
    for (const auto& o : outputs_) {
      if (given(o)) return;
      names += (names.empty() ? "" : " or ") + o;
    }
    throw CLI::ValidationError("--overwrite requires " + names);
  });
}

void Args::integer(const std::string& names, int& into, int min, int max, const std::string& value,
                   const std::string& help) {
  app_.add_option(names, into, help)->type_name(value)->check(in_range<long long>(min, max));
  entries_.push_back({names, value, help + " [" + std::to_string(min) + ", " + std::to_string(max) + "]"});
}

void Args::number(const std::string& names, double& into, double min, double max, const std::string& value,
                  const std::string& help) {
  app_.add_option(names, into, help)->type_name(value)->check(in_range<double>(min, max));
  entries_.push_back({names, value, help + " [" + show(min) + ", " + show(max) + "]"});
}

void Args::required(const std::string& name) {
  app_.get_option(name)->required();
  entry(name).required = true;
}

void Args::needs(const std::string& option, const std::string& needed) {
  app_.get_option(option)->needs(app_.get_option(needed));
}

void Args::excludes(const std::string& a, const std::string& b) {
  app_.get_option(a)->excludes(app_.get_option(b));
}

void Args::overrides(std::vector<std::string>& into, const std::string& help) {
  // One value per --set: `--set a=1 JOB.json` must not swallow the job.
  app_.add_option("--set", into, help)
      ->type_name("a.b=v")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  entries_.push_back({"--set", "a.b=v", help, false, false, true});
}

void Args::json(bool& into) { flag("--json", into, "print the result as JSON"); }

void Args::planner(std::string& into) {
  text("--planner", into, "P", "planner to use instead of the job's pipeline.planner");
}

void Args::profile(std::string& into) {
  text("--profile", into, "FILE", "measured profile to use instead of the job's model.profile");
}

void Args::run_outputs(RunOutputOptions& o) {
  output("--db", o.db_path, "RUN.sqlite", "record the run into this run database");
  overwrite(o.overwrite);
  text("--listen", o.listen, "ENDPOINT", "publish live telemetry and take control requests (tcp://127.0.0.1:PORT)");
  flag("--allow-remote", o.allow_remote, "let --listen bind beyond loopback (needs --curve-dir)");
  text("--curve-dir", o.curve_dir, "DIR", "CURVE server keys from `pipewright keys`, for --listen");
  needs("--allow-remote", "--listen");
  needs("--curve-dir", "--listen");
}

bool Args::given(const std::string& name) const { return app_.count(name) > 0; }

std::string Args::usage() const {
  std::string out;
  for (const auto& e : entries_) {
    std::string item = e.positional ? e.names : split_names(e.names).front();
    if (!e.value.empty()) item += " " + e.value;
    if (e.repeatable) item += " ...";
    if (!e.required) item = "[" + item + "]";
    out += (out.empty() ? "" : " ") + item;
  }
  return out;
}

std::string Args::help(const std::string& command, const std::string& summary) const {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& e : entries_)
    rows.emplace_back(e.positional ? e.names : display_names(e.names) + (e.value.empty() ? "" : " " + e.value),
                      e.help + (e.required && !e.positional ? " (required)" : ""));
  rows.emplace_back("-h, --help", "this help");
  rows.emplace_back("--", "end of options: what follows is an argument even if it starts with -");
  std::size_t width = 0;
  for (const auto& [l, r] : rows) width = std::max(width, l.size());
  width = std::min<std::size_t>(width, 30);
  std::string out = "usage: pipewright " + command + " " + usage() + "\n" + summary + "\n";
  bool in_options = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool positional = i < entries_.size() && entries_[i].positional;
    if (i == 0 && positional) out += "\narguments:\n";
    if (!positional && !in_options) out += "\noptions:\n", in_options = true;
    const auto& [l, r] = rows[i];
    out += "  " + l + (l.size() <= width ? std::string(width - l.size(), ' ') : std::string("\n  " + std::string(width, ' '))) +
           "  " + r + "\n";
  }
  return out;
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  // A third of the word may be wrong ("simluate", "--thrads"); a word that
  // begins a candidate ("--plan" for "--planner") is also what was meant.
  const std::string bare = word.substr(word.find_first_not_of('-') == std::string::npos ? 0 : word.find_first_not_of('-'));
  if (best_d != std::string::npos && best_d <= std::max<std::size_t>(1, bare.size() / 3)) return best;
  if (bare.size() >= 3)
    for (const auto& c : candidates)
      if (c.rfind(word, 0) == 0) return c;
  return {};
}

int run_command(const Command& c, const std::vector<std::string>& argv) {
  CLI::App app(c.summary, "pipewright " + c.name);
  Args args(app);
  Action action = c.define(args);
  auto usage_error = [&](const std::string& message) {
    std::cerr << "pipewright " << c.name << ": " << message << "\nusage: pipewright " << c.name << " " << args.usage()
              << "\n(pipewright " << c.name << " --help: what each option does)\n";
    return 2;
  };
  // A word left over, first: a misspelt option explains a "required" or
  // "requires" error that follows from it.
  auto leftover = [&]() -> std::string {
    for (const auto& w : app.remaining())
      if (w != "--") return unexpected(w, app);
    return {};
  };
  try {
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 pops from the back
    app.parse(reversed);
    if (auto m = leftover(); !m.empty()) return usage_error(m);
  } catch (const CLI::CallForHelp&) {
    std::cout << args.help(c.name, c.summary);
    return 0;
  } catch (const CLI::ParseError& e) {
    auto m = leftover();
    return usage_error(m.empty() ? parse_message(e, app) : m);
  }
  try {
    return action();
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const SpecError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const Interrupted& e) {
    std::cerr << "pipewright " << c.name << ": " << e.what() << "\n";
    return 128 + e.signal;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return is_refusal(e) ? 2 : 1;
  }
}

}  // namespace pw::cli
