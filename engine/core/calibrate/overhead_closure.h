#pragma once
#include <optional>

#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// The host time per action (DeviceSpec::action_overhead_us) at which the
// simulator reproduces a run's measured iteration time: `job` at the run's
// microbatch size with its other costs fitted (model.profile the calibrated
// profile, the sends), `plan` the partition and policy the run used. Counting the gaps
// between a stage's events (fit_action_overhead_us) misses what the host
// transport adds elsewhere: a receive the peer's stalled send delays reads
// as a longer wait, which the simulator then does not see, so on a shared
// CPU a model from counted gaps falls 5-15% short of the very run it was
// fitted on. Closing on the run's total prices that waiting as host time
// per action, the one term that grows as microbatches shrink.
//
// The simulated iteration grows with the overhead, so a bisection finds it
// (to 0.1 us). 0 when the simulation without any host
// time is already slower than measured (the compute alone explains the
// run); nullopt when the plan does not simulate (infeasible) or no finite
// overhead reaches the measured time.
std::optional<double> close_action_overhead_us(const JobSpec& job, const Plan& plan, double measured_iteration_ms);

}  // namespace pw
