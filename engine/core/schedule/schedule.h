#pragma once
#include <cstdint>
#include <memory>

#include "core/schedule/action.h"
#include "core/schedule/schedule_kind.h"

namespace pw {

// A static pipeline schedule: for every device, an ordered list of actions.
// Actions are computed from (device, index) in O(1) rather than stored, so
// a 1024-stage x 8192-microbatch iteration costs no memory.
class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual ScheduleKind kind() const = 0;
  int devices() const { return devices_; }
  int chunks() const { return chunks_; }
  int microbatches() const { return microbatches_; }  // per iteration
  // Microbatches the program spans: one iteration, or two for schedules
  // without a flush so the steady state can be measured.
  virtual int span_microbatches() const { return microbatches_; }
  bool flushes() const { return pw::flushes(kind()); }

  virtual std::int64_t length(int device) const = 0;
  virtual Action action(int device, std::int64_t index) const = 0;

  // Microbatches whose activations a device holds at most (per chunk).
  virtual int in_flight(int device) const = 0;
  // The same for one chunk of the device alone: a bound on that chunk's
  // share, which the planners size each chunk by (the chunks' bounds add
  // up to the device's). Defaults to the device's count.
  virtual int in_flight_of_chunk(int device, int chunk) const { return in_flight(device); }
  // Weight versions a device keeps (1 = no stashing).
  virtual int weight_versions(int device) const { return 1; }

  // Whether actions are BackwardInput / BackwardWeight pairs rather than a
  // full Backward (a schedule may also mix in full backwards: DualPipeV).
  virtual bool splits_backward() const { return false; }

  // Placement of virtual stages (model pieces in pipeline order) on devices.
  // Interleaved by default: chunk c of device d is virtual stage c*p + d.
  // V-shaped schedules override all three (device d: d and 2p-1-d).
  // Executors must use these, never the arithmetic.
  virtual int virtual_stage(int device, int chunk) const { return chunk * devices_ + device; }
  virtual int device_of_virtual_stage(int vs) const { return vs % devices_; }
  virtual int chunk_of_virtual_stage(int vs) const { return vs / devices_; }
  int virtual_stages() const { return devices_ * chunks_; }

 protected:
  Schedule(int devices, int microbatches, int chunks)
      : devices_(devices), chunks_(chunks), microbatches_(microbatches) {}
  int devices_, chunks_, microbatches_;
};

// The basic orders, built directly: GPipe, 1F1B, PipeDream's async 1F1B and
// Megatron's interleaved 1F1B (microbatches a multiple of devices, else
// std::invalid_argument). The zero-bubble, V and generated orders have their
// own headers; make_schedule (schedule_factory.cpp) builds any kind by name.
std::unique_ptr<Schedule> make_gpipe(int devices, int microbatches);
std::unique_ptr<Schedule> make_one_f_one_b(int devices, int microbatches);
std::unique_ptr<Schedule> make_pipedream(int devices, int microbatches);
std::unique_ptr<Schedule> make_interleaved(int devices, int microbatches, int chunks);

// Throws std::invalid_argument for impossible shapes (e.g. interleaved with
// microbatches not a multiple of devices) and for CSP, which is dynamic.
std::unique_ptr<Schedule> make_schedule(ScheduleKind kind, int devices, int microbatches, int chunks = 1);

}  // namespace pw
