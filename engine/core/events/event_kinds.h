#pragma once
#include "core/events/event.h"

namespace pw {

// The one classification of event kinds that statistics, telemetry, the
// database, the studio, the calibration and the idle-time attribution share
// (new kinds are classified here and nowhere else: code elsewhere asks these
// questions, it does not list kinds).

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

// A schedule's action: compute, or the optimizer step. Each costs the host
// its per-action overhead (DeviceSpec::action_overhead_us).
constexpr bool is_action(EventKind k) { return is_compute(k) || k == EventKind::OptimizerStep; }

// Backward compute of any form: the full backward, or a split one's B and
// W. A microbatch's backward cost on a stage is the sum of these.
constexpr bool is_backward(EventKind k) {
  return k == EventKind::Backward || k == EventKind::BackwardInput || k == EventKind::BackwardWeight;
}

// The backward that carries the gradient through the pipeline: it waits for
// the next stage's input gradient and computes its own for the previous
// stage. A full backward, or B of a split one; W needs only its own stage's
// B, so it waits for no peer.
constexpr bool carries_gradient(EventKind k) { return k == EventKind::Backward || k == EventKind::BackwardInput; }

// The event with which a microbatch's backward on a stage is complete: the
// full backward, or W when it is split (W follows its B on the stage).
constexpr bool completes_backward(EventKind k) { return k == EventKind::Backward || k == EventKind::BackwardWeight; }

// Work a memory policy adds (recompute, activations moved to and from the host).
constexpr bool is_memory_policy(EventKind k) {
  return k == EventKind::Recompute || k == EventKind::SwapIn || k == EventKind::SwapOut;
}

// Policy work that the engine runs inside a compute event of the same
// microbatch and chunk, and that is not that event's own compute: a
// forward's swap-outs; a gradient-carrying backward's recomputes and
// swap-ins. W's stash of a swapped layer goes out after B's event and comes
// back before W's, each its own event outside both. The simulator's policy work
// runs beside or before compute; where it overlaps a forward by time
// (a swap-in prefetched for the next backward) it is not inside it.
constexpr bool runs_inside(EventKind child, EventKind parent) {
  if (parent == EventKind::Forward) return child == EventKind::SwapOut;
  return carries_gradient(parent) && (child == EventKind::Recompute || child == EventKind::SwapIn);
}

// Activations moved between the device and the host by a copy engine.
constexpr bool is_swap(EventKind k) { return k == EventKind::SwapIn || k == EventKind::SwapOut; }

// Communication among a stage's replicas (the gradients' all-reduce): it
// runs on its own stream beside compute, so it is not busy time; what the
// optimizer step waits for of it is a cause of idle time of its own.
constexpr bool is_collective(EventKind k) { return k == EventKind::AllReduce; }

// Communication inside a stage's tensor-parallel group (Megatron's
// per-layer all-reduces): it blocks the stage's compute stream, so it is
// drawn there, but it is neither compute nor busy time nor idle: a cause
// of its own in the idle-time attribution (tensor_sync).
constexpr bool is_tensor_collective(EventKind k) { return k == EventKind::TensorAllReduce; }

// Any communication: point-to-point transfers between stages and the
// collectives among replicas or inside a tensor group.
constexpr bool is_communication(EventKind k) {
  return k == EventKind::Send || k == EventKind::Recv || is_collective(k) || is_tensor_collective(k);
}

// Where an event runs beside the others on its stage: the compute stream
// (with the tensor group's all-reduces, which block it), the copy engine
// (swaps), the links to the neighbouring stages (sends and receives), the
// collective stream among the stage's replicas. Traces and the studio draw
// one track each.
enum class EventLane : int { Compute = 0, Copy = 1, Link = 2, Collective = 3 };
constexpr int kEventLaneCount = 4;
constexpr EventLane lane_of(EventKind k) {
  return is_swap(k) ? EventLane::Copy
         : (k == EventKind::Send || k == EventKind::Recv) ? EventLane::Link
         : is_collective(k)                               ? EventLane::Collective
                                                          : EventLane::Compute;
}

}  // namespace pw
