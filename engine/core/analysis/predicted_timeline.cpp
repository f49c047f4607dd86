#include "core/analysis/predicted_timeline.h"

#include <algorithm>
#include <map>

#include "core/analysis/steps_per_iteration.h"
#include "core/job/job_plan.h"
#include "core/plan/plan_order.h"
#include "core/model/profile_io.h"

namespace pw {
namespace {

struct Collect final : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

}  // namespace

std::optional<PredictionInputs> prediction_inputs(const nlohmann::json& job, const nlohmann::json& profile,
                                                  std::vector<PlanAt> plans, std::string* why) {
  auto refuse = [&](const char* reason) {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (!job.is_object()) return refuse("the run recorded no job");
  if (!profile.is_object()) return refuse("the run recorded no profile");
  if (plans.empty()) return refuse("the run recorded no plan");
  PredictionInputs in;
  in.job = parse_job(job);
  in.profile = profile_from_json(profile);
  std::stable_sort(plans.begin(), plans.end(), [](const PlanAt& a, const PlanAt& b) { return a.t_ns < b.t_ns; });
  in.plans = std::move(plans);
  return in;
}

const PlanAt& plan_at(const std::vector<PlanAt>& plans, std::int64_t t) {
  const PlanAt* p = &plans.front();
  for (const auto& q : plans)
    if (q.t_ns <= t) p = &q;
  return *p;
}

PlanPrediction predict_plan(const JobSpec& job, const ModelProfile& profile, const Plan& plan) {
  // The job as prepare_job would have made it ready, with the recorded profile and plan.
  PreparedJob run;
  run.job = job;
  resolve_auto_schedule(run.job, plan);
  run.profile = profile;
  run.plan = plan;
  const PipelineSpec& pipe = run.job.pipeline;
  run.schedule = make_plan_schedule(pipe.schedule, pipe.stages, pipe.microbatches, pipe.chunks, run.plan);
  Collect c;
  simulate(run.sim_input(), &c);
  PlanPrediction p;
  p.steps_per_iteration = optimizer_steps_per_iteration(pipe.schedule, pipe.microbatches);
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = p.steps_per_iteration;
  ao.keep_intervals = false;
  p.attribution = attribute_idle(c.events, ao);
  p.events = std::move(c.events);
  return p;
}

int matching_predicted_iteration(int measured_iteration, int predicted_iterations) {
  return std::clamp(measured_iteration, 0, std::max(predicted_iterations - 1, 0));
}

std::vector<Event> align_predicted_to_measured(const std::vector<Event>& predicted, const Attribution& pa,
                                               const std::vector<std::int64_t>& measured_starts) {
  std::vector<Event> out;
  if (pa.iterations <= 0 || measured_starts.empty()) return out;
  const std::vector<std::int64_t> starts = iteration_starts(predicted, pa);
  const std::vector<int> of = iteration_of_events(predicted, pa);
  std::vector<std::vector<const Event*>> by_iteration(static_cast<std::size_t>(pa.iterations));
  for (std::size_t i = 0; i < predicted.size(); ++i)
    if (of[i] >= 0 && of[i] < pa.iterations) by_iteration[static_cast<std::size_t>(of[i])].push_back(&predicted[i]);
  std::size_t n = 0;
  for (std::size_t k = 0; k < measured_starts.size(); ++k)
    n += by_iteration[static_cast<std::size_t>(matching_predicted_iteration(static_cast<int>(k), pa.iterations))].size();
  out.reserve(n);
  for (std::size_t k = 0; k < measured_starts.size(); ++k) {
    const auto j = static_cast<std::size_t>(matching_predicted_iteration(static_cast<int>(k), pa.iterations));
    const std::int64_t shift = measured_starts[k] - starts[j];
    for (const Event* e : by_iteration[j]) {
      Event x = *e;
      x.start_ns += shift;
      x.end_ns += shift;
      out.push_back(x);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start_ns < b.start_ns;
  });
  return out;
}

PredictedTimeline predict_timeline(const std::vector<Event>& measured, const Attribution& ma,
                                   const PredictionInputs& in, int iteration, std::int64_t threshold_ns, bool align) {
  PredictedTimeline t;
  t.iteration = iteration;
  t.plan_diff.iterations = 0;  // until a plan's iterations are pooled
  if (in.plans.empty() || ma.iterations <= 0) return t;
  const std::vector<std::int64_t> starts = iteration_starts(measured, ma);
  std::map<int, PlanPrediction> by_version;  // simulated once per plan
  auto prediction = [&](const PlanAt& p) -> const PlanPrediction& {
    auto it = by_version.find(p.version);
    if (it == by_version.end()) it = by_version.emplace(p.version, predict_plan(in.job, in.profile, p.plan)).first;
    return it->second;
  };
  // Runs of consecutive iterations under one plan: [first, end).
  for (int first = 0; first < ma.iterations;) {
    const PlanAt& plan = plan_at(in.plans, starts[static_cast<std::size_t>(first)]);
    int end = first + 1;
    while (end < ma.iterations && plan_at(in.plans, starts[static_cast<std::size_t>(end)]).version == plan.version) ++end;
    const PlanPrediction& p = prediction(plan);
    if (align) {
      std::vector<std::int64_t> segment(starts.begin() + first, starts.begin() + end);
      auto shifted = align_predicted_to_measured(p.events, p.attribution, segment);
      t.events.insert(t.events.end(), shifted.begin(), shifted.end());
    }
    if (iteration >= first && iteration < end) {
      t.plan_version = plan.version;
      const int pi = matching_predicted_iteration(iteration - first, p.attribution.iterations);
      const PredictionComparison compare(measured, ma, p.events, p.attribution);
      t.diff = compare.iteration(iteration, pi, threshold_ns);
      std::vector<std::pair<int, int>> pairs;
      for (int k = end - first > 1 ? first + 1 : first; k < end; ++k)
        pairs.emplace_back(k, matching_predicted_iteration(k - first, p.attribution.iterations));
      t.plan_diff = compare.pooled(pairs);
      if (t.diff.divergence) {
        const Divergence& d = *t.diff.divergence;
        const std::int64_t origin = starts[static_cast<std::size_t>(iteration)];
        t.mark = DivergenceMark{d, origin + d.measured_offset_ns, origin + d.measured_offset_ns + d.measured_duration_ns,
                                origin + d.predicted_offset_ns, origin + d.predicted_offset_ns + d.predicted_duration_ns};
      }
    }
    first = end;
  }
  if (align && by_version.size() > 1)
    std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
      return a.stage != b.stage ? a.stage < b.stage : a.start_ns < b.start_ns;
    });
  return t;
}

double model_error_on_run(const PredictedTimeline& t) {
  return model_error(t.plan_diff.iterations > 0 ? t.plan_diff : t.diff);
}

}  // namespace pw
