#pragma once
#include <memory>
#include <vector>

#include "core/schedule/schedule.h"

namespace pw {

// A schedule whose per-device orders are generated once per (devices,
// microbatches) and stored. The zero-bubble family is built this way rather
// than computed from (device, index) like 1F1B: each device runs three kinds
// of action whose interleaving changes across warm-up, steady state and
// drain (W deferred by a device-dependent lag, DualPipeV's eight phases),
// and the in-flight counts follow from the order. Memory: three actions per
// microbatch per device (8 bytes each).
class ListSchedule : public Schedule {
 public:
  ListSchedule(int devices, int microbatches, int chunks, std::vector<std::vector<Action>> order);
  std::int64_t length(int device) const override { return static_cast<std::int64_t>(order_[device].size()); }
  Action action(int device, std::int64_t index) const override { return order_[device][index]; }
  // Most (microbatch, chunk) pairs whose activations (or, after B, W's
  // stash) the device holds at once, counted from the order: up at F, down
  // at W or a full backward. Like interleaved 1F1B's, summed over chunks.
  int in_flight(int device) const override { return in_flight_[device]; }
  // Counted the same way over one chunk's actions only.
  int in_flight_of_chunk(int device, int chunk) const override { return chunk_in_flight_[device][chunk]; }

 private:
  std::vector<std::vector<Action>> order_;
  std::vector<int> in_flight_;
  std::vector<std::vector<int>> chunk_in_flight_;
};

// Two chunks per device folded into a V: device d runs virtual stage d
// (chunk 0, on the way out) and 2p-1-d (chunk 1, on the way back), so the
// last virtual stage sits on device 0 next to the first, and the turn
// (p-1 -> p) needs no transfer.
class VShapeSchedule : public ListSchedule {
 public:
  using ListSchedule::ListSchedule;
  bool splits_backward() const override { return true; }
  int virtual_stage(int device, int chunk) const override { return chunk == 0 ? device : 2 * devices_ - 1 - device; }
  int device_of_virtual_stage(int vs) const override { return vs < devices_ ? vs : 2 * devices_ - 1 - vs; }
  int chunk_of_virtual_stage(int vs) const override { return vs < devices_ ? 0 : 1; }
};

// Zero Bubble (Qi et al., ICLR 2024) and DualPipeV (DeepSeek). Orders and
// the formulas they meet: docs/simulator.md. Throw std::invalid_argument for
// shapes a schedule cannot run (DualPipeV needs microbatches >= 2 x devices).
std::unique_ptr<Schedule> make_zb_h1(int devices, int microbatches);
std::unique_ptr<Schedule> make_zb_h2(int devices, int microbatches);
std::unique_ptr<Schedule> make_zb_v(int devices, int microbatches);
std::unique_ptr<Schedule> make_dualpipe_v(int devices, int microbatches);

}  // namespace pw
