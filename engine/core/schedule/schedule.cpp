#include "core/schedule/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw {
namespace {

Action fwd(int mb, int chunk = 0) { return {ActionKind::Forward, static_cast<std::uint16_t>(chunk), mb}; }
Action bwd(int mb, int chunk = 0) { return {ActionKind::Backward, static_cast<std::uint16_t>(chunk), mb}; }
Action step() { return {ActionKind::OptimizerStep, 0, -1}; }

// GPipe: all forwards, all backwards, one optimizer step.
class GPipeSchedule final : public Schedule {
 public:
  GPipeSchedule(int d, int m) : Schedule(d, m, 1) {}
  ScheduleKind kind() const override { return ScheduleKind::GPipe; }
  std::int64_t length(int) const override { return 2LL * microbatches_ + 1; }
  Action action(int, std::int64_t i) const override {
    if (i < microbatches_) return fwd(static_cast<int>(i));
    if (i < 2LL * microbatches_) return bwd(static_cast<int>(i - microbatches_));
    return step();
  }
  int in_flight(int) const override { return microbatches_; }
};

// 1F1B: warm-up forwards, then alternate one forward / one backward, then
// drain. `m` is the number of microbatches the program runs.
struct OneFOneBOrder {
  static std::int64_t warmup(int device, int devices, int m) { return std::min(devices - device - 1, m); }
  static Action at(int device, int devices, int m, std::int64_t i) {
    std::int64_t w = warmup(device, devices, m);
    if (i < w) return fwd(static_cast<int>(i));
    std::int64_t k = i - w;
    std::int64_t steady = m - w;
    if (k < 2 * steady) return (k % 2 == 0) ? fwd(static_cast<int>(w + k / 2)) : bwd(static_cast<int>(k / 2));
    return bwd(static_cast<int>(steady + (k - 2 * steady)));
  }
};

class OneFOneBSchedule final : public Schedule {
 public:
  OneFOneBSchedule(int d, int m) : Schedule(d, m, 1) {}
  ScheduleKind kind() const override { return ScheduleKind::OneFOneB; }
  std::int64_t length(int) const override { return 2LL * microbatches_ + 1; }
  Action action(int d, std::int64_t i) const override {
    if (i == 2LL * microbatches_) return step();
    return OneFOneBOrder::at(d, devices_, microbatches_, i);
  }
  int in_flight(int d) const override { return std::min(microbatches_, devices_ - d); }
};

// PipeDream: 1F1B with no flush; every backward is followed by that
// stage's weight update, and forwards use the stashed version they started
// with. Two iterations are laid out back to back so the executor can
// measure the steady state.
class PipeDreamSchedule final : public Schedule {
 public:
  PipeDreamSchedule(int d, int m) : Schedule(d, m, 1) {}
  ScheduleKind kind() const override { return ScheduleKind::PipeDream; }
  int span_microbatches() const override { return 2 * microbatches_; }
  std::int64_t length(int) const override { return 3LL * span_microbatches(); }
  Action action(int d, std::int64_t i) const override {
    int m = span_microbatches();
    std::int64_t w = OneFOneBOrder::warmup(d, devices_, m);
    if (i < w) return fwd(static_cast<int>(i));
    // After warm-up each backward is followed by its step: F B S F B S ...
    std::int64_t k = i - w;
    std::int64_t steady = m - w;
    if (k < 3 * steady) {
      std::int64_t r = k % 3, n = k / 3;
      if (r == 0) return fwd(static_cast<int>(w + n));
      if (r == 1) return bwd(static_cast<int>(n));
      return {ActionKind::OptimizerStep, 0, static_cast<int>(n)};
    }
    std::int64_t c = k - 3 * steady;
    std::int64_t n = steady + c / 2;
    if (c % 2 == 0) return bwd(static_cast<int>(n));
    return {ActionKind::OptimizerStep, 0, static_cast<int>(n)};
  }
  int in_flight(int d) const override { return std::min(span_microbatches(), devices_ - d); }
  int weight_versions(int d) const override { return devices_ - d; }
};

// Megatron-LM's interleaved 1F1B: device d holds chunks d, d+p, ...; the
// order of (microbatch, chunk) pairs follows Megatron's
// forward_backward_pipelining_with_interleaving.
class InterleavedSchedule final : public Schedule {
 public:
  InterleavedSchedule(int d, int m, int v) : Schedule(d, m, v) {}
  ScheduleKind kind() const override { return ScheduleKind::Interleaved; }
  std::int64_t total() const { return static_cast<std::int64_t>(microbatches_) * chunks_; }
  std::int64_t warmup(int d) const {
    std::int64_t w = static_cast<std::int64_t>(devices_ - d - 1) * 2 + static_cast<std::int64_t>(chunks_ - 1) * devices_;
    return std::min(w, total());
  }
  std::int64_t length(int) const override { return 2 * total() + 1; }
  Action virtual_mb(std::int64_t k, bool forward) const {
    std::int64_t group = devices_ * chunks_;
    int chunk = static_cast<int>((k % group) / devices_);
    if (!forward) chunk = chunks_ - 1 - chunk;
    int mb = static_cast<int>((k / group) * devices_ + k % devices_);
    return forward ? fwd(mb, chunk) : bwd(mb, chunk);
  }
  Action action(int d, std::int64_t i) const override {
    if (i == 2 * total()) return step();
    std::int64_t w = warmup(d);
    if (i < w) return virtual_mb(i, true);
    std::int64_t k = i - w, steady = total() - w;
    if (k < 2 * steady) return (k % 2 == 0) ? virtual_mb(w + k / 2, true) : virtual_mb(k / 2, false);
    return virtual_mb(steady + (k - 2 * steady), false);
  }
  int in_flight(int d) const override {
    // Warm-up forwards plus the one in steady state, spread over chunks.
    return static_cast<int>(std::min<std::int64_t>(total(), warmup(d) + 1));
  }
};
}  // namespace

std::unique_ptr<Schedule> make_gpipe(int devices, int microbatches) {
  return std::make_unique<GPipeSchedule>(devices, microbatches);
}

std::unique_ptr<Schedule> make_one_f_one_b(int devices, int microbatches) {
  return std::make_unique<OneFOneBSchedule>(devices, microbatches);
}

std::unique_ptr<Schedule> make_pipedream(int devices, int microbatches) {
  return std::make_unique<PipeDreamSchedule>(devices, microbatches);
}

std::unique_ptr<Schedule> make_interleaved(int devices, int microbatches, int chunks) {
  if (microbatches % devices != 0)
    throw std::invalid_argument("interleaved 1F1B needs microbatches (" + std::to_string(microbatches) +
                                ") to be a multiple of devices (" + std::to_string(devices) + ")");
  return std::make_unique<InterleavedSchedule>(devices, microbatches, chunks);
}

}  // namespace pw
