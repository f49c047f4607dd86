#pragma once
#include "core/events/event.h"

namespace pw {

// The one classification of event kinds that statistics, telemetry, the
// database, the studio and the idle-time attribution share (new kinds are
// classified here and nowhere else).

// The stage is occupied by its own training work: model compute, the
// recompute a memory policy adds, and the optimizer step. "busy_ns" in
// replay, watch and telemetry sums these kinds. Swaps and transfers run on
// copy engines and links beside compute, so they are not busy time.
constexpr bool is_busy(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::BackwardInput ||
         k == EventKind::BackwardWeight || k == EventKind::Recompute || k == EventKind::OptimizerStep;
}

// Model compute that advances a microbatch through the pipeline: what the
// idle-time attribution calls "compute". Recompute and the optimizer step
// are busy but are attributed as causes of their own (a memory policy's
// price, the per-iteration update), so compute + causes = wall.
// A split backward (zero-bubble B and W) is compute like the full one.
constexpr bool is_compute(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::BackwardInput ||
         k == EventKind::BackwardWeight;
}

// Work a memory policy adds (recompute, activations moved to and from the host).
constexpr bool is_memory_policy(EventKind k) {
  return k == EventKind::Recompute || k == EventKind::SwapIn || k == EventKind::SwapOut;
}

}  // namespace pw
