#include "runtime/event_clock.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/events/clock.h"
#ifdef PW_WITH_CUDA
#include "runtime/cuda/cuda_backends.h"
#endif

namespace pw::rt {

EventClock::Mark HostClock::mark() { return steady_now_ns(); }

DeviceClock::DeviceClock(std::unique_ptr<DeviceTimer> timer, std::function<std::int64_t()> host_now)
    : timer_(std::move(timer)), host_now_(host_now ? std::move(host_now) : [] { return steady_now_ns(); }) {}

EventClock::Mark DeviceClock::mark() {
  // A mark taken after a resolve starts the next batch: slots are reused.
  if (!resolved_.empty()) {
    resolved_.clear();
    marks_ = 0;
  }
  timer_->record(marks_);
  return static_cast<Mark>(marks_++);
}

void DeviceClock::resolve() {
  if (marks_ == 0 || !resolved_.empty()) return;
  std::size_t anchor = marks_;
  timer_->record(anchor);
  timer_->synchronize(anchor);
  std::int64_t at = host_now_();
  resolved_.resize(marks_);
  for (std::size_t i = 0; i < marks_; ++i)
    resolved_[i] = at - std::llround(timer_->elapsed_ms(i, anchor) * 1e6);
}

std::int64_t DeviceClock::host_ns(Mark m) const {
  if (m < 0 || static_cast<std::size_t>(m) >= resolved_.size())
    throw std::logic_error("device event mark " + std::to_string(m) + " read before its resolve");
  return resolved_[static_cast<std::size_t>(m)];
}

std::unique_ptr<EventClock> make_event_clock(const c10::Device& device) {
  if (device.is_cpu()) return std::make_unique<HostClock>();
#ifdef PW_WITH_CUDA
  if (device.is_cuda()) return std::make_unique<DeviceClock>(cuda::make_timer(device.has_index() ? device.index() : 0));
#endif
  throw std::invalid_argument("no event clock for device " + device.str() +
                              (device.is_cuda() ? " (this build's libtorch has no CUDA)" : ""));
}

}  // namespace pw::rt
