#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/db/explain_report.h"
#include "cli/format.h"
#include "cli/db/recording.h"
#include "db/run_reader.h"

namespace pw::cli {
namespace {

std::string ms(std::int64_t ns) { return fixed(ns / 1e6, 2); }

void print_human(const nlohmann::json& x) {
  std::cout << "run " << x["run_id"].get<std::string>() << " (" << x["source"].get<std::string>() << ") of job "
            << x["name"].get<std::string>() << ": iteration " << x["iteration"] << " of " << x["iterations"];
  if (x.value("replicas", 1) > 1)
    std::cout << ", replica " << x["replica"] << "'s pipeline (" << x["replicas"] << " replicas; "
              << x["recorded_replicas"] << " recorded)";
  std::cout << "\n\n";
  // Columns: the causes that occur anywhere; waits on named peers summed in
  // "dependency" and listed under the table.
  std::vector<std::string> cols;
  bool any_wait = false;
  for (const auto& [k, v] : x["totals"]["causes"].items()) {
    if (v.get<std::int64_t>() == 0) continue;
    if (k.rfind("wait_", 0) == 0) any_wait = true;
    else cols.push_back(k);
  }
  if (any_wait) cols.push_back("dependency");
  auto value = [](const nlohmann::json& causes, const std::string& c) {
    if (c != "dependency") return causes.value(c, std::int64_t{0});
    std::int64_t t = 0;
    for (const auto& [k, v] : causes.items())
      if (k.rfind("wait_", 0) == 0) t += v.get<std::int64_t>();
    return t;
  };
  auto width = [](const std::string& c) { return std::max<std::size_t>(c.size(), 9) + 2; };
  std::cout << "where the time went (ms; compute + causes = wall):\n  stage" << pad("wall", 11) << pad("compute", 11);
  for (const auto& c : cols) std::cout << pad(c, width(c));
  std::cout << "\n";
  for (const auto& s : x["stages"]) {
    std::cout << pad(std::to_string(s["stage"].get<int>()), 7) << pad(ms(s["wall_ns"]), 11) << pad(ms(s["compute_ns"]), 11);
    for (const auto& c : cols) std::cout << pad(ms(value(s["causes"], c)), width(c));
    std::cout << "\n";
  }
  if (any_wait) {
    std::cout << "  dependency waits:";
    for (const auto& s : x["stages"])
      for (const auto& [k, v] : s["causes"].items())
        if (k.rfind("wait_", 0) == 0 && v.get<std::int64_t>() > 0) {
          // "wait_gradient_from_stage_4" -> "stage 3 on 4's gradient"
          const bool grad = k.find("gradient") != std::string::npos;
          std::cout << "\n    stage " << s["stage"] << " on stage " << k.substr(k.rfind('_') + 1) << "'s "
                    << (grad ? "gradient" : "activation") << ": " << ms(v) << " ms";
        }
    std::cout << "\n";
  }
  const auto& cp = x["critical_path"];
  std::cout << "\ncritical path: " << ms(cp["length_ns"]) << " ms over " << cp["steps"].size() << " steps\n  by stage:";
  for (const auto& s : cp["stages"])
    if (s["ns"].get<std::int64_t>() > 0) std::cout << "  " << s["stage"] << " " << pct(s["share"].get<double>());
  std::cout << "\n  by cause:";
  for (const auto& [k, v] : cp["causes"].items()) std::cout << "  " << k << " " << pct(v["share"].get<double>());
  std::cout << "\n";
  if (x.contains("gradient_sync") && x["gradient_sync"].is_object()) {
    const auto& g = x["gradient_sync"];
    std::cout << "\ngradient sync (steps waiting for the replicas' all-reduce): " << ms(g["ns"]) << " ms, "
              << pct(g["share"].get<double>()) << " of the stages' wall time";
    if (g["largest_stage"].get<int>() >= 0)
      std::cout << " (most on stage " << g["largest_stage"] << ": " << ms(g["largest_stage_ns"]) << " ms)";
    std::cout << "; " << pct(g["critical_path_share"].get<double>()) << " of the critical path\n";
  }
  if (x.contains("offload") && x["offload"].is_object()) {
    // core's offload_lines: the whole, then a line per stage.
    const auto& lines = x["offload"]["lines"];
    for (std::size_t i = 0; i < lines.size(); ++i) std::cout << (i == 0 ? "\n" : "  ") << lines[i].get<std::string>() << "\n";
  }
  const auto& p = x["predicted_vs_measured"];
  if (!p.is_null()) {
    std::cout << "\npredicted vs measured (plan " << p["plan_version"] << "): iteration " << fixed(p["measured_iteration_ms"].get<double>(), 2)
              << " ms measured, " << fixed(p["predicted_iteration_ms"].get<double>(), 2) << " ms predicted (x"
              << fixed(p["ratio"].get<double>(), 3) << ")\n  stage  kind        measured  predicted   ratio   plan mean   ratio\n";
    for (const auto& k : p["kinds"]) {
      std::cout << pad(std::to_string(k["stage"].get<int>()), 7) << "  " << k["kind"].get<std::string>()
                << std::string(std::max<int>(1, 10 - static_cast<int>(k["kind"].get<std::string>().size())), ' ')
                << pad(fixed(k["measured_ms"].get<double>(), 3), 9) << " " << pad(fixed(k["predicted_ms"].get<double>(), 3), 10)
                << " " << pad(fixed(k["ratio"].get<double>(), 3), 7);  // a space even when a figure overflows
      if (k.contains("plan_measured_ms"))
        std::cout << " " << pad(fixed(k["plan_measured_ms"].get<double>(), 3), 11) << " " << pad(fixed(k["plan_ratio"].get<double>(), 3), 7);
      std::cout << "\n";
    }
    if (p.contains("plan_iterations") && p["plan_iterations"].get<int>() > 0)
      std::cout << "  over " << p["plan_iterations"] << " iteration(s) of plan " << p["plan_version"]
                << " (its first left out when more follow): " << fixed(p["plan_measured_iteration_ms"].get<double>(), 2)
                << " ms measured, " << fixed(p["plan_predicted_iteration_ms"].get<double>(), 2)
                << " ms predicted; model error " << fixed(100 * p["model_error"].get<double>(), 1) << "% (this iteration alone "
                << fixed(100 * p["iteration_error"].get<double>(), 1) << "%)\n";
    const auto& d = p["first_divergence"];
    if (d.is_null())
      std::cout << "  every action starts within " << fixed(p["threshold_ms"].get<double>(), 2) << " ms of its prediction\n";
    else
      std::cout << "  first divergence: stage " << d["stage"] << " " << d["kind"].get<std::string>() << " of microbatch "
                << d["microbatch"] << " starts at " << fixed(d["measured_start_ms"].get<double>(), 2) << " ms, predicted "
                << fixed(d["predicted_start_ms"].get<double>(), 2) << " ms (threshold "
                << fixed(p["threshold_ms"].get<double>(), 2) << " ms)\n";
  }
  std::cout << "\nsuggestions (each simulated";
  if (x.contains("model_error") && x["model_error"].is_number())
    std::cout << ", offered when its gain exceeds the model's error here, " << fixed(100 * x["model_error"].get<double>(), 1) << "%";
  if (!x["suggestions"].empty()) std::cout << "; --set to reproduce";
  std::cout << "):\n";
  const bool known_error = x.contains("model_error") && x["model_error"].is_number();
  if (x["suggestions"].empty())
    std::cout << (known_error ? "  none whose simulated gain exceeds the model's error on this run (" +
                                    fixed(100 * x["model_error"].get<double>(), 1) + "%)\n"
                              : std::string("  none that shortens the simulated iteration\n"));
  for (const auto& s : x["suggestions"]) {
    std::cout << "  - " << s["change"].get<std::string>() << ": iteration " << fixed(s["iteration_ms_before"].get<double>(), 2)
              << " -> " << fixed(s["iteration_ms_after"].get<double>(), 2) << " ms ("
              << fixed(100 * s["iteration_change"].get<double>(), 1) << "%), bubble " << pct(s["bubble_before"].get<double>())
              << " -> " << pct(s["bubble_after"].get<double>()) << ", peak memory "
              << gib(s["peak_memory_bytes_after"].get<std::uint64_t>()) << " of " << gib(s["memory_budget_bytes"].get<std::uint64_t>())
              << "\n     ";
    for (const auto& o : s["set"]) std::cout << " --set " << o.get<std::string>();
    std::cout << "\n";
  }
  for (const auto& n : x["notes"]) std::cout << "note: " << n.get<std::string>() << "\n";
}

}  // namespace

Action define_explain(Args& args) {
  struct A {
    std::string db;
    int iteration = -1;
    int replica = 0;
    double threshold_ms = -1;
    bool json = false, no_suggestions = false;
  };
  auto a = std::make_shared<A>();
  args.positional("RUN.sqlite", a->db, "the run database");
  args.integer("--iteration", a->iteration, 0, 1'000'000'000, "N", "the iteration to explain (default: the last complete one)");
  args.number("--threshold-ms", a->threshold_ms, 0, 1e9, "T",
              "an action starting this much off its prediction diverges (default: 5% of the predicted iteration)");
  args.integer("--replica", a->replica, 0, 32767, "R", "the data-parallel replica whose pipeline is explained (default 0)");
  args.flag("--no-suggestions", a->no_suggestions, "skip the simulated suggestions");
  args.json(a->json);
  return [a, &args] {
    ExplainOptions opt;
    if (args.given("--iteration")) opt.iteration = a->iteration;
    if (args.given("--threshold-ms")) opt.threshold_ms = a->threshold_ms;
    opt.suggestions = !a->no_suggestions;
    opt.replica = a->replica;
    db::RunReader r(a->db);
    return interpret_recording(a->db, [&] {
      auto x = explain_run(r, opt);
      if (a->json)
        std::cout << x.dump(2) << "\n";
      else
        print_human(x);
      return 0;
    });
  };
}

}  // namespace pw::cli
