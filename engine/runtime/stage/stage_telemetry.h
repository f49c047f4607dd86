#pragma once
// What a stage reports of itself: its events, stamped on its compute
// device's timeline, and its memory account. Apart from the executor's
// state so that stamping (immediate on CPU, deferred to the iteration's
// end on a GPU) and the account have one owner the other parts report to.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/events/event.h"
#include "runtime/device_placement.h"
#include "runtime/event_clock.h"
#include "runtime/memory.h"
#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt::stage_impl {

class StageTelemetry {
 public:
  // Metered and timed on `placement`'s device; events go to `sink` (none: not recorded).
  StageTelemetry(int stage, std::int64_t budget_bytes, const StageDevice& placement, EventSink* sink);

  StageMemory& memory() { return memory_; }
  EventClock::Mark mark() { return clock_->mark(); }
  // `e` ran from mark `t0` to now. A compute action of a tensor-parallel
  // stage (watch_tensor_comm) is emitted as the simulator draws it: its
  // compute, then one TensorAllReduce event of the all-reduces it ran (their
  // summed time, at its end; core/sim/simulator.cpp, emit_with_tensor).
  void emit(Event e, EventClock::Mark t0);
  // The log a tensor-parallel stage's conjugate ops write (tensor_set.h).
  void watch_tensor_comm(std::shared_ptr<TensorCommLog> log) { tensor_log_ = std::move(log); }
  // `e` ran from mark `t0` to mark `t1` (work that ended off the stage's
  // thread: a replica all-reduce, stage/gradient_sync.h).
  void emit_span(Event e, EventClock::Mark t0, EventClock::Mark t1);
  // Marks are host times (steady_now_ns) on this stage's clock.
  bool immediate() const { return clock_->immediate(); }
  // Stamps and delivers the events the clock could not stamp yet: once per
  // iteration, so a GPU is not waited on in the middle of one.
  void flush_events();
  // The clock to stamp later events with; those marked on the old one are flushed first.
  void use_clock(std::unique_ptr<EventClock> clock);

  // What stays between iterations: the parameters and their gradients,
  // `optimizer_states` tensors per parameter (0 before the first step),
  // and the stashed weight versions.
  void update_static(const std::vector<at::Tensor>& params, int optimizer_states, std::int64_t stashed_bytes);

 private:
  EventSink* sink_;
  std::shared_ptr<TensorCommLog> tensor_log_;
  StageMemory memory_;  // before the clock, as the stage always built them
  std::unique_ptr<EventClock> clock_;
  struct PendingEvent {
    Event event;
    EventClock::Mark start, end;
  };
  std::vector<PendingEvent> pending_;
};

}  // namespace pw::rt::stage_impl
