#pragma once
#include "core/spec/job_spec.h"

namespace pw {

// The learning rate of the optimizer step taken at `progress` (iterations
// done so far, fractional for schedules that step per microbatch):
// training.lr, optionally after a linear warmup of training.warmup
// iterations, then constant or cosine-decayed to 0 at training.iterations.
// One definition for every stage process, the reference loops and resume,
// so all of them step with bitwise the same rate.
double learning_rate_at(const TrainingSpec& training, double progress);

}  // namespace pw
