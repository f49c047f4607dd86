#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/spec/job_spec.h"
#include "gui/models/simulated_iteration.h"
#include "gui/models/supernet_prediction.h"

namespace pw::gui {

// A job under one planner: its plan and one simulated iteration.
struct PlannerOutcome {
  std::string planner;
  bool ok = false;
  std::string error;  // the planner or the schedule refused the job
  SimulatedIteration iteration;
};

// What the designer shows for a job: the chosen planner first, then every
// other known planner (pw::planner_names()) as a baseline; for a supernet
// job (search_space set) the supernet simulator's modes instead.
struct Prediction {
  std::optional<SupernetPrediction> supernet;
  std::vector<PlannerOutcome> outcomes;
  int layers = 0;
  std::vector<std::string> layer_names;
  ModelProfile profile;  // the job's layer costs (analytic or measured)
  const PlannerOutcome* chosen() const { return outcomes.empty() ? nullptr : &outcomes.front(); }
};

// Plans and simulates a valid job under all planners. Pure and
// thread-safe: the designer runs it on a worker (QtConcurrent).
Prediction predict(const JobSpec& job);

}  // namespace pw::gui
