#pragma once
#include <vector>

#include "core/job/job_plan.h"
#include "core/sim/simulator.h"
#include "gui/models/run_batch.h"

namespace pw::gui {

// One iteration of a prepared job on the simulator, in the studio's
// records: what "simulate this job", the designer's prediction and the
// simulated run source all start from.
struct SimulatedIteration {
  RunInfo info;
  PlanVersion plan;
  std::vector<Event> events;         // sorted by start
  std::vector<MemorySample> memory;  // sorted by time, split by category
  std::int64_t period = 1;           // the iteration's span in ns
  SimResult result;
};

SimulatedIteration simulate_iteration(const PreparedJob& job);

// `iterations` copies of an iteration back to back, as one batch.
RunBatch repeat_iteration(const SimulatedIteration& it, int iterations);

}  // namespace pw::gui
