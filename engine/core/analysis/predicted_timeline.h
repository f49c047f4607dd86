#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/analysis/prediction_diff.h"
#include "core/model/layer_profile.h"
#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// A plan a run recorded, and when it came into force.
struct PlanAt {
  std::int64_t t_ns = 0;
  int version = 1;
  Plan plan;
};

// What the simulator needs to predict a recorded run: its job, profile and plans.
struct PredictionInputs {
  JobSpec job;
  ModelProfile profile;
  std::vector<PlanAt> plans;  // by time
};

// From a run's recorded documents (as `pipewright run` and `simulate --db`
// store them); nullopt, with the reason in `why`, when the run recorded no
// job, profile or plan. Throws what the parsers throw for bad documents.
std::optional<PredictionInputs> prediction_inputs(const nlohmann::json& job, const nlohmann::json& profile,
                                                  std::vector<PlanAt> plans, std::string* why);

// The plan in force at t: the last one recorded at or before t (the first
// when t precedes them all). `plans` must not be empty.
const PlanAt& plan_at(const std::vector<PlanAt>& plans, std::int64_t t_ns);

// The simulator's timeline of one plan of a job (pipeline.schedule "auto":
// the schedule the plan names): one iteration, two for schedules without a
// flush (PipeDream; the second is the steady state), and its attribution.
struct PlanPrediction {
  std::vector<Event> events;
  Attribution attribution;  // totals only (no intervals)
  int steps_per_iteration = 1;
};
PlanPrediction predict_plan(const JobSpec& job, const ModelProfile& profile, const Plan& plan);

// The predicted iteration that the k-th measured iteration under a plan is
// compared with: k while the prediction has it, else its last (the steady
// state).
int matching_predicted_iteration(int measured_iteration, int predicted_iterations);

// The predicted timeline laid under the measured one: for each measured
// iteration k (starting at measured_starts[k]), a copy of its matching
// predicted iteration shifted so that it starts there too (starts as
// iteration_starts defines them). A predicted event belongs to the
// iteration whose window on its stage holds its start (the attribution's
// windows); events outside every window are left out. Sorted by stage,
// then start.
std::vector<Event> align_predicted_to_measured(const std::vector<Event>& predicted,
                                               const Attribution& predicted_attribution,
                                               const std::vector<std::int64_t>& measured_starts);

// The first divergence in absolute measured time: the measured action and
// where the aligned prediction has it.
struct DivergenceMark {
  Divergence divergence;
  std::int64_t measured_start_ns = 0, measured_end_ns = 0;
  std::int64_t predicted_start_ns = 0, predicted_end_ns = 0;
};

struct PredictedTimeline {
  int iteration = -1;     // the measured iteration compared
  int plan_version = 0;   // the plan in force at its start
  PredictionDiff diff;    // that iteration against its matching predicted one
  // Every complete measured iteration under that plan against its matching
  // predicted one, pooled (pool_predictions), but the plan's first when more
  // follow: it pays one-off costs (allocation, first touch, layers moving in)
  // that no plan or suggestion changes. The model's error on the run
  // (model_error of this) is what advice must beat: one iteration of a
  // noisy run can read far from the mean the plan was predicted for.
  PredictionDiff plan_diff;  // iterations 0 where none were pooled (no complete iteration)
  std::optional<DivergenceMark> mark;
  std::vector<Event> events;  // every complete measured iteration's prediction, aligned (when asked)
};

// Predicts a recorded run (`measured`, attributed into `measured_attribution`
// over all its iterations) from its inputs: each measured iteration under
// the plan in force at its start (iteration_starts; a plan's measured
// iterations count from its first), compares `iteration` (docs/explain.md: predicted vs measured)
// and, with `align`, lays the whole prediction under the measured run.
PredictedTimeline predict_timeline(const std::vector<Event>& measured, const Attribution& measured_attribution,
                                   const PredictionInputs& inputs, int iteration, std::int64_t threshold_ns = -1,
                                   bool align = true);

// The model's error on the run that explain's and the studio's advice must
// beat: model_error over the plan's pooled iterations (plan_diff), the one
// iteration's where none were pooled.
double model_error_on_run(const PredictedTimeline& t);

}  // namespace pw
