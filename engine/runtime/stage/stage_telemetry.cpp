// A stage's events and memory account (stage_telemetry.h).
#include "runtime/stage/stage_telemetry.h"

#include "runtime/device_memory.h"

namespace pw::rt::stage_impl {

StageTelemetry::StageTelemetry(int stage, std::int64_t budget_bytes, const StageDevice& placement, EventSink* sink)
    : sink_(sink),
      memory_(stage, budget_bytes, device_memory(placement.device)),
      clock_(make_event_clock(placement.device)) {}

void StageTelemetry::emit(Event e, EventClock::Mark t0) {
  if (!sink_) return;
  emit_span(e, t0, clock_->mark());
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
