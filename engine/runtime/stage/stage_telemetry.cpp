// A stage's events and memory account (stage_telemetry.h).
#include "runtime/stage/stage_telemetry.h"

#include <algorithm>

#include "runtime/device_memory.h"

namespace pw::rt::stage_impl {

StageTelemetry::StageTelemetry(int stage, std::int64_t budget_bytes, const StageDevice& placement, EventSink* sink)
    : sink_(sink),
      memory_(stage, budget_bytes, device_memory(placement.device)),
      clock_(make_event_clock(placement.device)) {}

namespace {
// The actions whose layers' blocks all-reduce over the tensor group.
bool runs_tensor_blocks(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::BackwardInput ||
         k == EventKind::BackwardWeight || k == EventKind::Recompute;
}
}  // namespace

void StageTelemetry::emit(Event e, EventClock::Mark t0) {
  std::vector<TensorCommLog::Span> spans;
  if (tensor_log_ && runs_tensor_blocks(e.kind)) spans = tensor_log_->take();
  if (!sink_) return;
  const EventClock::Mark t1 = clock_->mark();
  // A device clock's marks are not host times: the spans (host times) cannot
  // be placed on its timeline, and the action is emitted whole.
  if (spans.empty() || !clock_->immediate()) return emit_span(e, t0, t1);
  std::int64_t tp = 0, bytes = 0;
  for (const auto& s : spans) {
    tp += s.end_ns - s.start_ns;
    bytes += s.bytes;
  }
  tp = std::min<std::int64_t>(tp, t1 - t0);
  emit_span(e, t0, t1 - tp);
  Event c = e;
  c.kind = EventKind::TensorAllReduce;
  c.bytes = bytes;
  emit_span(c, t1 - tp, t1);
}

void StageTelemetry::emit_span(Event e, EventClock::Mark t0, EventClock::Mark t1) {
  if (!sink_) return;
  if (!clock_->immediate()) {
    pending_.push_back({e, t0, t1});
    return;
  }
  e.start_ns = clock_->host_ns(t0);
  e.end_ns = clock_->host_ns(t1);
  sink_->on_event(e);
}

void StageTelemetry::flush_events() {
  if (pending_.empty()) return;
  clock_->resolve();
  for (auto& p : pending_) {
    p.event.start_ns = clock_->host_ns(p.start);
    p.event.end_ns = clock_->host_ns(p.end);
    sink_->on_event(p.event);
  }
  pending_.clear();
}

void StageTelemetry::use_clock(std::unique_ptr<EventClock> clock) {
  flush_events();
  clock_ = std::move(clock);
}

void StageTelemetry::update_static(const std::vector<at::Tensor>& params, int optimizer_states,
                                   std::int64_t stashed_bytes) {
  std::int64_t p = 0, g = 0;
  for (auto& t : params) {
    p += t.nbytes();
    if (t.grad().defined()) g += t.grad().nbytes();
  }
  memory_.set_static(p, g, optimizer_states * p, stashed_bytes);
}

}  // namespace pw::rt::stage_impl
