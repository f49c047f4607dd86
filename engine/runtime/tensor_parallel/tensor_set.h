#pragma once
// The tensor-parallel group of one stage of one replica (parallel.tensor,
// Megatron-LM's tensor parallelism): the workers that each hold a shard of
// the stage's layers and all-reduce activations (forward) and their
// gradients (backward) inside every transformer block. A count of 1 (the
// default) is an unsplit stage, no group.
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/device_placement.h"
#include "runtime/torch_compat.h"  // compat::CommGroup

namespace pw::rt {

// The all-reduces a stage's tensor-parallel blocks ran since the stage last
// looked: they run inside a layer's forward or inside autograd's backward,
// where no event context exists, so the stage's telemetry takes them as it
// emits the action's event and records their time as the action's own
// TensorAllReduce event (stage/stage_telemetry.h).
class TensorCommLog {
 public:
  struct Span {
    bool backward = false;  // a gradient's all-reduce (f's backward), else an activation's (g's forward)
    std::int64_t bytes = 0;
    std::int64_t start_ns = 0, end_ns = 0;  // steady_now_ns
  };
  void add(const Span& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    spans_.push_back(s);
  }
  std::vector<Span> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(spans_, {});
  }

 private:
  std::mutex mutex_;  // autograd may run a backward on its own thread
  std::vector<Span> spans_;
};

struct TensorSet {
  c10::intrusive_ptr<compat::CommGroup> group;
  int index = 0;  // this worker's tensor rank k
  int count = 1;  // parallel.tensor
  StageDevice placement;  // where the all-reduced tensors reach the transport
  std::shared_ptr<TensorCommLog> log = std::make_shared<TensorCommLog>();
};

}  // namespace pw::rt
