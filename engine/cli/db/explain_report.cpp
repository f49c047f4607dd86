#include "cli/db/explain_report.h"

#include <algorithm>
#include <map>

#include "cli/command.h"
#include "core/analysis/explain_report.h"
#include "core/plan/layer_list.h"
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

// The steps' wait for the replicas' all-reduce against the stages' wall
// time and on the critical path; null where the report has none.
nlohmann::json gradient_sync_json(const ExplainReport& x, std::int64_t wall) {
  if (!x.gradient_sync) return nullptr;
  const GradientSyncSummary& g = *x.gradient_sync;
  const CriticalPath& cp = x.critical_path;
  const int k = static_cast<int>(IdleCause::GradientSync);
  const double len = static_cast<double>(std::max<std::int64_t>(cp.length_ns(), 1));
  return {{"ns", g.ns},
          {"share", g.ns / static_cast<double>(std::max<std::int64_t>(wall, 1))},
          {"largest_stage", g.largest_stage},
          {"largest_stage_ns", g.largest_stage_ns},
          {"critical_path_ns", cp.cause_ns[k]},
          {"critical_path_share", cp.cause_ns[k] / len}};
}

// Activation offload in the explained iteration: per stage the layers
// offloaded, the bytes, the host link's time and what of it compute hid;
// each microbatch's offload and reload. Null where no stage swapped.
nlohmann::json offload_json(const ExplainReport& x) {
  if (!x.offload) return nullptr;
  const OffloadSummary& o = *x.offload;
  nlohmann::json stages = nlohmann::json::array();
  for (const StageOffload& s : o.stages) {
    nlohmann::json mbs = nlohmann::json::array();
    for (const MicrobatchOffload& m : s.microbatches)
      mbs.push_back({{"microbatch", m.microbatch},
                     {"chunk", m.chunk},
                     {"out_start_ns", m.out_start_ns},
                     {"out_end_ns", m.out_end_ns},
                     {"in_start_ns", m.in_start_ns},
                     {"in_end_ns", m.in_end_ns},
                     {"stash_out_start_ns", m.stash_out_start_ns},
                     {"stash_out_end_ns", m.stash_out_end_ns},
                     {"stash_in_start_ns", m.stash_in_start_ns},
                     {"stash_in_end_ns", m.stash_in_end_ns}});
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"layer_list", layer_list(s.layers)},
                      {"bytes_out", s.bytes_out},
                      {"bytes_in", s.bytes_in},
                      {"stash_bytes_out", s.stash_bytes_out},
                      {"link_ns", s.link_ns},
                      {"hidden_ns", s.hidden_ns()},
                      {"exposed_ns", s.exposed_ns},
                      {"microbatches", mbs}});
  }
  return {{"link_ns", o.link_ns}, {"hidden_ns", o.hidden_ns()}, {"exposed_ns", o.exposed_ns},
          {"bytes_out", o.bytes_out}, {"stash_bytes_out", o.stash_bytes_out}, {"stages", stages},
          {"lines", offload_lines(o)}};
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

// The simulator's timeline of the plan the run used against the measured one.
nlohmann::json predicted_json(const PredictedTimeline& t) {
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

nlohmann::json suggestion_json(const Suggestion& s) {
  return {{"change", s.change},
          {"addresses", s.addresses},
          {"set", s.overrides},
          {"iteration_ms_before", s.iteration_ms_before},
          {"iteration_ms_after", s.iteration_ms_after},
          {"iteration_change", s.iteration_ms_after / s.iteration_ms_before - 1.0},
          {"bubble_before", s.bubble_before},
          {"bubble_after", s.bubble_after},
          {"peak_memory_bytes_before", s.peak_memory_before},
          {"peak_memory_bytes_after", s.peak_memory_after},
          {"memory_budget_bytes", s.memory_budget}};
}

// The recorded job, profile and plans as the prediction's inputs, or why none.
ExplainSources explain_sources(const db::RunReader& r, int recorded_replicas) {
  ExplainSources src;
  src.job = r.job();
  src.planned_replicas = planned_replicas(r, recorded_replicas);
  try {
    std::vector<PlanAt> plans;
    for (const auto& p : r.plans()) plans.push_back({p.t_ns, p.version, plan_from_json(p.plan)});
    std::string why;
    if (auto in = prediction_inputs(src.job, r.profile(), std::move(plans), &why))
      src.prediction = std::make_shared<const PredictionInputs>(std::move(*in));
    else
      src.prediction_none = why;
  } catch (const nlohmann::json::exception&) {
    throw;  // damage of the recording's documents, not a note (cli/db/recording.h)
  } catch (const std::exception& e) {
    src.prediction_none = e.what();
  }
  return src;
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

  ExplainReportOptions ro;
  ro.iteration = opt.iteration;
  ro.threshold_ms = opt.threshold_ms;
  ro.suggestions = opt.suggestions;
  const ExplainSources src = explain_sources(r, replicas);
  const ExplainReport x = explain_report(events, src, ro);
  if (x.iterations == 0) throw RefusedError(r.path() + ": the run has no complete iteration: nothing to explain");
  if (!x.explained)
    throw UsageError("--iteration " + std::to_string(x.iteration) + ": the run has " + std::to_string(x.iterations) +
                     " complete iteration" + (x.iterations == 1 ? "" : "s") + " (0.." +
                     std::to_string(x.iterations - 1) + ")");
  return explain_json(r, x, opt.replica, replicas, src.planned_replicas, events.size());
}

nlohmann::json explain_json(const db::RunReader& r, const ExplainReport& x, int replica, int recorded_replicas,
                            int planned_replicas, std::size_t event_count) {
  nlohmann::json j;
  j["file"] = r.path();
  j["run_id"] = r.run().run_id;
  j["source"] = r.run().source;
  j["name"] = r.run().name;
  j["iteration"] = x.iteration;
  j["iterations"] = x.iterations;
  j["replica"] = replica;
  j["recorded_replicas"] = recorded_replicas;
  j["replicas"] = planned_replicas;
  j["events"] = event_count;
  nlohmann::json stages = nlohmann::json::array();
  std::int64_t wall = 0, compute = 0;
  std::map<std::string, std::int64_t> totals;
  for (const StageIteration* s : x.stages()) {
    auto c = causes_json(*s);
    for (auto& [k, v] : c.items()) totals[k] += v.get<std::int64_t>();
    stages.push_back({{"stage", s->stage},
                      {"start_ns", s->start_ns},
                      {"end_ns", s->end_ns},
                      {"wall_ns", s->wall_ns()},
                      {"compute_ns", s->compute_ns},
                      {"causes", c}});
    wall += s->wall_ns();
    compute += s->compute_ns;
  }
  j["stages"] = stages;
  j["totals"] = {{"wall_ns", wall}, {"compute_ns", compute}, {"causes", totals}};
  j["critical_path"] = path_json(x.critical_path);
  j["gradient_sync"] = gradient_sync_json(x, wall);
  j["offload"] = offload_json(x);
  j["predicted_vs_measured"] = x.prediction ? predicted_json(*x.prediction) : nlohmann::json(nullptr);
  j["model_error"] = x.model_error >= 0 ? nlohmann::json(x.model_error) : nlohmann::json(nullptr);
  nlohmann::json sug = nlohmann::json::array();
  for (const auto& s : x.advice.suggestions) sug.push_back(suggestion_json(s));
  j["suggestions"] = sug;
  j["notes"] = x.notes;
  return j;
}

}  // namespace pw::cli
