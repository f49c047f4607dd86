#pragma once
#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"

namespace pw::rt {

struct ProfileOptions {
  int repeats = 10;  // timed runs per layer (median), after 2 warm-up runs
  int threads = 0;   // intra-op threads (0: cores / stages, as a worker gets)
};

// Measures every layer of the job's model on this machine, one microbatch
// at a time: forward and backward time (median), bytes a kept layer holds
// for backward (allocator-counted, plus its input as the analytic profile
// counts it), input/output/parameter bytes, optimizer state and step time.
// The result is the same structure the planner takes (source "measured").
ModelProfile measure_profile(const JobSpec& job, const ProfileOptions& options = {});

}  // namespace pw::rt
