#pragma once
#include <cstdint>

namespace pw {

// The unit of a schedule: what one stage does next. Communication is
// implied (a forward on a non-first virtual stage first receives its input,
// a forward on a non-last one sends its output; backward the other way), and
// recompute / swap come from the plan's per-layer policy, so one schedule
// serves every plan and both executors (simulator and engine).
enum class ActionKind : std::uint8_t { Forward, Backward, OptimizerStep };

struct Action {
  ActionKind kind = ActionKind::Forward;
  std::uint16_t chunk = 0;      // model chunk on this device (interleaved); 0 otherwise
  std::int32_t microbatch = 0;  // microbatch index within the simulated span
};

}  // namespace pw
