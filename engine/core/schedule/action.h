#pragma once
#include <cstdint>

namespace pw {

// The unit of a schedule: what one stage does next. Communication is
// implied (a forward on a non-first virtual stage first receives its input,
// a forward on a non-last one sends its output; backward the other way), and
// recompute / swap come from the plan's per-layer policy, so one schedule
// serves every plan and both executors (simulator and engine).
// Backward is the full backward (input and weight gradients together); the
// zero-bubble schedules split it into BackwardInput (B: the gradient of the
// stage's input, on the critical path, sent upstream) and BackwardWeight (W:
// the weight gradients, which only the optimizer step waits for), so W can
// fill a bubble. A stage keeps its activations until W has run.
enum class ActionKind : std::uint8_t { Forward, Backward, OptimizerStep, BackwardInput, BackwardWeight };

struct Action {
  ActionKind kind = ActionKind::Forward;
  std::uint16_t chunk = 0;      // model chunk on this device (interleaved); 0 otherwise
  std::int32_t microbatch = 0;  // microbatch index within the simulated span
};

}  // namespace pw
