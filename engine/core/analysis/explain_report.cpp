#include "core/analysis/explain_report.h"

#include <algorithm>

#include "core/analysis/steps_per_iteration.h"

namespace pw {
namespace {

std::optional<GradientSyncSummary> gradient_sync(const Attribution& a, const CriticalPath& cp, int iteration, int replicas) {
  const int k = static_cast<int>(IdleCause::GradientSync);
  GradientSyncSummary g;
  for (const auto& s : a.stage_iterations) {
    if (s.iteration != iteration) continue;
    g.ns += s.cause_ns[k];
    if (s.cause_ns[k] > g.largest_stage_ns) g.largest_stage_ns = s.cause_ns[k], g.largest_stage = s.stage;
  }
  if (g.ns == 0 && cp.cause_ns[k] == 0 && replicas <= 1) return std::nullopt;
  return g;
}

// The suggestions' simulations, or a note saying why there are none.
std::shared_ptr<const SuggestionReport> simulated_suggestions(const ExplainSources& src, std::vector<std::string>& notes) {
  if (src.simulated) return src.simulated;
  if (!src.job.is_object()) {
    notes.push_back("suggestions: the run recorded no job");
    return nullptr;
  }
  try {
    return std::make_shared<const SuggestionReport>(simulate_suggestions(src.job));
  } catch (const nlohmann::json::exception&) {
    throw;  // damage of the recorded job, not a note
  } catch (const std::exception& e) {
    notes.push_back(std::string("suggestions: the recorded job cannot be simulated: ") + e.what());
    return nullptr;
  }
}

}  // namespace

std::vector<const StageIteration*> ExplainReport::stages() const {
  std::vector<const StageIteration*> out;
  for (const auto& s : attribution.stage_iterations)
    if (s.iteration == iteration) out.push_back(&s);
  return out;
}

ExplainReport explain_report(const std::vector<Event>& events, const ExplainSources& src, const ExplainReportOptions& opt) {
  ExplainReport r;
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = src.prediction ? optimizer_steps_per_iteration(src.prediction->job.pipeline.schedule,
                                                                                     src.prediction->job.pipeline.microbatches)
                                                    : optimizer_steps_per_iteration(src.job);
  r.attribution = attribute_idle(events, ao);  // every iteration: the critical path may reach into the one before
  r.iterations = r.attribution.iterations;
  r.iteration = opt.iteration.value_or(r.iterations - 1);
  if (r.iterations == 0 || r.iteration < 0 || r.iteration >= r.iterations) return r;
  r.explained = true;
  r.critical_path = critical_path(events, r.attribution, r.iteration);
  r.gradient_sync = gradient_sync(r.attribution, r.critical_path, r.iteration, src.planned_replicas);
  r.offload = offload_summary(events, r.attribution, r.iteration);

  if (!src.prediction) {
    r.notes.push_back("predicted vs measured: " + src.prediction_none);
  } else {
    try {
      const std::int64_t threshold = opt.threshold_ms ? static_cast<std::int64_t>(*opt.threshold_ms * 1e6) : -1;
      r.prediction = predict_timeline(events, r.attribution, *src.prediction, r.iteration, threshold, /*align=*/false);
      r.model_error = model_error_on_run(*r.prediction);
    } catch (const nlohmann::json::exception&) {
      throw;  // damage of the recording's documents, not a note
    } catch (const std::exception& e) {
      r.notes.push_back(std::string("predicted vs measured: ") + e.what());
    }
  }

  r.suggestions_asked = opt.suggestions;
  if (opt.suggestions) {
    if (auto sim = simulated_suggestions(src, r.notes)) {
      // A suggestion must gain more than the model was off on this very run.
      r.advice = advise(*sim, r.model_error, opt.max_suggestions);
      for (const auto& n : sim->notes) r.notes.push_back("suggestion not simulated: " + n);
      for (const auto& c : sim->caveats) r.notes.push_back("advice: " + c);
      // advise() appended its own notes (the withheld, an unknown error) after the simulation's.
      for (std::size_t i = sim->notes.size(); i < r.advice.notes.size(); ++i) r.notes.push_back(r.advice.notes[i]);
    }
  }
  return r;
}

}  // namespace pw
