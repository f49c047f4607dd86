#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace pw::rt {

// Where a stage's event times come from. Every real event is stamped on
// the host's steady clock (core/events/clock.h), so workers, the studio
// and calibration read one timeline. On CPU an action's work is done when
// the call returns, so the host clock around it is the truth. On a GPU the
// call only queues kernels: the host clock would time the launches. There
// the stage marks points on the compute stream instead and converts them
// to host time once per iteration, at one synchronised host/device point.
class EventClock {
 public:
  using Mark = std::int64_t;
  virtual ~EventClock() = default;
  // A point in the stage's work: now (host), or when the device reaches
  // the work queued so far (device).
  virtual Mark mark() = 0;
  // Marks are host times already: events can be emitted at once.
  virtual bool immediate() const = 0;
  // Resolves the marks taken since the last resolve (at most one host/device
  // synchronisation); host_ns() answers for them until the next mark().
  virtual void resolve() = 0;
  virtual std::int64_t host_ns(Mark m) const = 0;
};

class HostClock final : public EventClock {
 public:
  Mark mark() override;
  bool immediate() const override { return true; }
  void resolve() override {}
  std::int64_t host_ns(Mark m) const override { return m; }
};

// A device's timestamps: events recorded in slots on the compute stream.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Records slot `slot` (0, 1, ... in order; slots are reused after a
  // resolve) on the device's current stream.
  virtual void record(std::size_t slot) = 0;
  // Blocks the host until the device has reached slot `slot`.
  virtual void synchronize(std::size_t slot) = 0;
  // Device time from slot `from` to slot `to`, in milliseconds.
  virtual double elapsed_ms(std::size_t from, std::size_t to) const = 0;
};

// Marks are slots of a DeviceTimer. resolve() records one anchor slot
// after them, waits for it and reads the host clock: the anchor happened
// then (to within the wait's wake-up), and every mark happened its device
// distance before it. Anchoring at the end keeps the distances positive
// and the one wait where the iteration ends anyway.
class DeviceClock final : public EventClock {
 public:
  explicit DeviceClock(std::unique_ptr<DeviceTimer> timer, std::function<std::int64_t()> host_now = {});
  Mark mark() override;
  bool immediate() const override { return false; }
  void resolve() override;
  std::int64_t host_ns(Mark m) const override;

 private:
  std::unique_ptr<DeviceTimer> timer_;
  std::function<std::int64_t()> host_now_;
  std::size_t marks_ = 0;
  std::vector<std::int64_t> resolved_;
};

// The clock for a stage whose tensors live on `device`: the host clock on
// CPU, CUDA events on CUDA (PW_WITH_CUDA builds). Throws
// std::invalid_argument where this build has no timer for the device.
std::unique_ptr<EventClock> make_event_clock(const c10::Device& device);

}  // namespace pw::rt
