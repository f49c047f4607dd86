#pragma once
#include <nlohmann/json.hpp>

#include "core/schedule/schedule_kind.h"

namespace pw {

// Optimizer steps that make one iteration of a stage (what the idle-time
// attribution delimits iterations by): PipeDream updates after every
// microbatch, so its iteration is `microbatches` steps; every other
// schedule flushes and steps once.
int optimizer_steps_per_iteration(ScheduleKind schedule, int microbatches);
// The same for a job document as recorded; 1 for one this build no longer accepts.
int optimizer_steps_per_iteration(const nlohmann::json& job);

}  // namespace pw
