#include "cli/db/explain_report.h"

#include <algorithm>
#include <map>

#include "cli/command.h"
#include "core/analysis/critical_path.h"
#include "core/analysis/idle_attribution.h"
#include "core/analysis/predicted_timeline.h"
#include "core/analysis/steps_per_iteration.h"
#include "core/analysis/suggestions.h"
#include "core/plan/plan.h"
#include "core/spec/job_spec.h"
#include "core/spec/refusal.h"
#include "db/run_reader.h"

namespace pw::cli {
namespace {

nlohmann::json causes_json(const StageIteration& s) {
  nlohmann::json c = nlohmann::json::object();
  for (int k = 0; k < kIdleCauseCount; ++k) {
    auto cause = static_cast<IdleCause>(k);
    if (cause == IdleCause::Dependency) continue;  // named per peer below
    c[to_string(cause)] = s.cause_ns[k];
  }
  for (std::size_t p = 0; p < s.activation_wait_ns.size(); ++p)
    if (s.activation_wait_ns[p]) c[dependency_name(static_cast<int>(p), false)] = s.activation_wait_ns[p];
  for (std::size_t p = 0; p < s.gradient_wait_ns.size(); ++p)
    if (s.gradient_wait_ns[p]) c[dependency_name(static_cast<int>(p), true)] = s.gradient_wait_ns[p];
  return c;
}

nlohmann::json path_json(const CriticalPath& cp) {
  nlohmann::json j;
  const double len = static_cast<double>(std::max<std::int64_t>(cp.length_ns(), 1));
  j["iteration"] = cp.iteration;
  j["start_ns"] = cp.start_ns;
  j["end_ns"] = cp.end_ns;
  j["length_ns"] = cp.length_ns();
  nlohmann::json st = nlohmann::json::array();
  for (std::size_t s = 0; s < cp.stage_ns.size(); ++s)
    st.push_back({{"stage", s}, {"ns", cp.stage_ns[s]}, {"share", cp.stage_ns[s] / len}});
  j["stages"] = st;
  nlohmann::json causes = {{"compute", {{"ns", cp.compute_ns}, {"share", cp.compute_ns / len}}}};
  for (int k = 0; k < kIdleCauseCount; ++k)
    if (cp.cause_ns[k]) causes[to_string(static_cast<IdleCause>(k))] = {{"ns", cp.cause_ns[k]}, {"share", cp.cause_ns[k] / len}};
  j["causes"] = causes;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : cp.steps)
    steps.push_back({{"stage", s.stage},
                     {"start_ns", s.start_ns},
                     {"end_ns", s.end_ns},
                     {"what", s.compute ? std::string(to_string(s.kind)) : std::string(to_string(s.cause))},
                     {"microbatch", s.microbatch}});
  j["steps"] = steps;
  return j;
}

// The optimizer steps' wait for the replicas' all-reduce, summed over the
// stages of the iteration, against their wall time and on the critical
// path; null for a run without replicas and without such waits.
nlohmann::json gradient_sync_json(const Attribution& a, const CriticalPath& cp, int iteration, std::int64_t wall, int replicas) {
  const int k = static_cast<int>(IdleCause::GradientSync);
  std::int64_t total = 0, largest = 0;
  int largest_stage = -1;
  for (const auto& s : a.stage_iterations) {
    if (s.iteration != iteration) continue;
    total += s.cause_ns[k];
    if (s.cause_ns[k] > largest) largest = s.cause_ns[k], largest_stage = s.stage;
  }
  if (total == 0 && cp.cause_ns[k] == 0 && replicas <= 1) return nullptr;
  const double len = static_cast<double>(std::max<std::int64_t>(cp.length_ns(), 1));
  return {{"ns", total},
          {"share", total / static_cast<double>(std::max<std::int64_t>(wall, 1))},
          {"largest_stage", largest_stage},
          {"largest_stage_ns", largest},
          {"critical_path_ns", cp.cause_ns[k]},
          {"critical_path_share", cp.cause_ns[k] / len}};
}

// Replicas the run trained with: its last plan's parallel.data (the
// simulator records one replica of several), else those it recorded.
int planned_replicas(const db::RunReader& r, int recorded) {
  auto plans = r.plans();
  if (plans.empty()) return recorded;
  const auto& p = plans.back().plan;
  if (!p.contains("parallel") || !p["parallel"].is_object()) return recorded;
  const auto& d = p["parallel"].value("data", nlohmann::json(recorded));
  return d.is_number_integer() && d.get<std::int64_t>() >= 1 ? std::max(static_cast<int>(d.get<std::int64_t>()), recorded) : recorded;
}

// The simulator's timeline of the plan the run used, when it recorded its job, plan and profile.
std::optional<nlohmann::json> predicted_vs_measured(const db::RunReader& r, const std::vector<Event>& events,
                                                    const Attribution& attribution, int iteration,
                                                    const ExplainOptions& opt, nlohmann::json& notes) {
  std::vector<PlanAt> plans;
  for (const auto& p : r.plans()) plans.push_back({p.t_ns, p.version, plan_from_json(p.plan)});
  std::string why;
  auto inputs = prediction_inputs(r.job(), r.profile(), std::move(plans), &why);
  if (!inputs) {
    notes.push_back("predicted vs measured: " + why);
    return std::nullopt;
  }
  std::int64_t threshold = opt.threshold_ms ? static_cast<std::int64_t>(*opt.threshold_ms * 1e6) : -1;
  const PredictedTimeline t = predict_timeline(events, attribution, *inputs, iteration, threshold, /*align=*/false);
  const PredictionDiff& d = t.diff;
  nlohmann::json j;
  j["plan_version"] = t.plan_version;
  j["measured_iteration_ms"] = d.measured_iteration_ns / 1e6;
  j["predicted_iteration_ms"] = d.predicted_iteration_ns / 1e6;
  j["ratio"] = d.predicted_iteration_ns > 0 ? static_cast<double>(d.measured_iteration_ns) / d.predicted_iteration_ns : 0.0;
  j["threshold_ms"] = d.threshold_ns / 1e6;
  j["iteration_error"] = model_error(d);
  const PredictionDiff& pooled = t.plan_diff;
  j["plan_iterations"] = pooled.iterations;
  j["plan_measured_iteration_ms"] = pooled.measured_iteration_ns / 1e6;
  j["plan_predicted_iteration_ms"] = pooled.predicted_iteration_ns / 1e6;
  j["model_error"] = model_error_on_run(t);
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& k : d.kinds) {
    nlohmann::json row{{"stage", k.stage},
                       {"kind", to_string(k.kind)},
                       {"measured_ms", k.measured_ms},
                       {"predicted_ms", k.predicted_ms},
                       {"ratio", k.ratio()},
                       {"measured_count", k.measured_count},
                       {"predicted_count", k.predicted_count}};
    // The same stage and kind over the plan's pooled iterations: what the
    // model's error on the run is made of.
    for (const auto& m : pooled.kinds)
      if (m.stage == k.stage && m.kind == k.kind) row["plan_measured_ms"] = m.measured_ms, row["plan_ratio"] = m.ratio();
    kinds.push_back(std::move(row));
  }
  j["kinds"] = kinds;
  if (d.divergence) {
    const auto& v = *d.divergence;
    j["first_divergence"] = {{"stage", v.stage},
                             {"kind", to_string(v.kind)},
                             {"microbatch", v.microbatch},
                             {"index", v.index},
                             {"measured_start_ms", v.measured_offset_ns / 1e6},
                             {"predicted_start_ms", v.predicted_offset_ns / 1e6}};
  } else {
    j["first_divergence"] = nullptr;
  }
  return j;
}

nlohmann::json suggestions_json(const db::RunReader& r, double error, nlohmann::json& notes) {
  nlohmann::json out = nlohmann::json::array();
  auto job = r.job();
  if (!job.is_object()) {
    notes.push_back("suggestions: the run recorded no job");
    return out;
  }
  SuggestionReport rep;
  try {
    rep = suggest_changes(job, 5, error);
  } catch (const nlohmann::json::exception&) {
    throw;  // damage of the recorded job, not a note (cli/db/recording.h)
  } catch (const std::exception& e) {
    notes.push_back(std::string("suggestions: the recorded job cannot be simulated: ") + e.what());
    return out;
  }
  for (const auto& n : rep.notes) notes.push_back("suggestion not simulated: " + n);
  for (const auto& s : rep.suggestions)
    out.push_back({{"change", s.change},
                   {"addresses", s.addresses},
                   {"set", s.overrides},
                   {"iteration_ms_before", s.iteration_ms_before},
                   {"iteration_ms_after", s.iteration_ms_after},
                   {"iteration_change", s.iteration_ms_after / s.iteration_ms_before - 1.0},
                   {"bubble_before", s.bubble_before},
                   {"bubble_after", s.bubble_after},
                   {"peak_memory_bytes_before", s.peak_memory_before},
                   {"peak_memory_bytes_after", s.peak_memory_after},
                   {"memory_budget_bytes", s.memory_budget}});
  return out;
}

}  // namespace

nlohmann::json explain_run(const db::RunReader& r, const ExplainOptions& opt) {
  // One pipeline: the replicas share stage numbers, and each runs alike.
  const int replicas = r.replicas();
  if (opt.replica < 0 || opt.replica >= replicas)
    throw UsageError("--replica " + std::to_string(opt.replica) + ": the run recorded " + std::to_string(replicas) +
                     " replica" + (replicas == 1 ? "" : "s") + " (0.." + std::to_string(replicas - 1) + ")");
  std::vector<Event> events;
  events.reserve(static_cast<std::size_t>(std::max<std::int64_t>(r.event_count(), 0) / replicas));
  r.for_each_event([&](const Event& e) {
    if (e.replica == opt.replica) events.push_back(e);
  });
  if (events.empty()) throw RefusedError(r.path() + ": the run recorded no events: nothing to explain");

  AttributionOptions ao;
  const int steps_per_iteration = optimizer_steps_per_iteration(r.job());
  ao.optimizer_steps_per_iteration = steps_per_iteration;
  Attribution a = attribute_idle(events, ao);  // every iteration: the critical path may reach into the one before
  if (a.iterations == 0) throw RefusedError(r.path() + ": the run has no complete iteration: nothing to explain");
  const int iteration = opt.iteration.value_or(a.iterations - 1);
  if (iteration < 0 || iteration >= a.iterations)
    throw UsageError("--iteration " + std::to_string(iteration) + ": the run has " + std::to_string(a.iterations) +
                     " complete iteration" + (a.iterations == 1 ? "" : "s") + " (0.." +
                     std::to_string(a.iterations - 1) + ")");

  nlohmann::json j;
  j["file"] = r.path();
  j["run_id"] = r.run().run_id;
  j["source"] = r.run().source;
  j["name"] = r.run().name;
  j["iteration"] = iteration;
  j["iterations"] = a.iterations;
  j["replica"] = opt.replica;
  j["recorded_replicas"] = replicas;
  const int planned = planned_replicas(r, replicas);
  j["replicas"] = planned;
  j["events"] = events.size();
  nlohmann::json stages = nlohmann::json::array();
  std::int64_t wall = 0, compute = 0;
  std::map<std::string, std::int64_t> totals;
  for (const auto& s : a.stage_iterations) {
    if (s.iteration != iteration) continue;
    auto c = causes_json(s);
    for (auto& [k, v] : c.items()) totals[k] += v.get<std::int64_t>();
    stages.push_back({{"stage", s.stage},
                      {"start_ns", s.start_ns},
                      {"end_ns", s.end_ns},
                      {"wall_ns", s.wall_ns()},
                      {"compute_ns", s.compute_ns},
                      {"causes", c}});
    wall += s.wall_ns();
    compute += s.compute_ns;
  }
  j["stages"] = stages;
  j["totals"] = {{"wall_ns", wall}, {"compute_ns", compute}, {"causes", totals}};
  const CriticalPath cp = critical_path(events, a, iteration);
  j["critical_path"] = path_json(cp);
  j["gradient_sync"] = gradient_sync_json(a, cp, iteration, wall, planned);
  nlohmann::json notes = nlohmann::json::array();
  try {
    auto p = predicted_vs_measured(r, events, a, iteration, opt, notes);
    j["predicted_vs_measured"] = p ? *p : nlohmann::json(nullptr);
  } catch (const nlohmann::json::exception&) {
    throw;  // damage of the recording's documents, not a note (cli/db/recording.h)
  } catch (const std::exception& e) {
    notes.push_back(std::string("predicted vs measured: ") + e.what());
    j["predicted_vs_measured"] = nullptr;
  }
  // A suggestion must gain more than the model was off on this very run.
  const nlohmann::json& pvm = j["predicted_vs_measured"];
  const double error = pvm.is_object() ? pvm.value("model_error", -1.0) : -1.0;
  j["model_error"] = error >= 0 ? nlohmann::json(error) : nlohmann::json(nullptr);
  j["suggestions"] = opt.suggestions ? suggestions_json(r, error, notes) : nlohmann::json::array();
  j["notes"] = notes;
  return j;
}

}  // namespace pw::cli
