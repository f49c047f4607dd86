#pragma once
#include <ATen/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/spec/job_spec.h"
#include "runtime/device_placement.h"
#include "runtime/memory.h"
#include <torch/nn/modules/container/sequential.h>  // layer()

#include <c10/util/intrusive_ptr.h>

#include "runtime/tensor_parallel/tensor_set.h"
#include "runtime/torch_compat.h"  // compat::CommGroup

namespace torch::optim {
class Optimizer;  // optimizer()
}

namespace pw::rt {

class TrainData;
struct Dataset;

// The other replicas of this stage (parallel.data) and this one's place
// among them: their c10d group (rank = replica) averages the stage's
// gradients before every optimizer step (stage/gradient_sync.h). A count of
// 1 (the default) is one pipeline, no group.
struct ReplicaSet {
  c10::intrusive_ptr<compat::CommGroup> group;
  int index = 0;
  int count = 1;
};
class EventClock;  // event_clock.h

// One pipeline stage's share of a job: its layers (every virtual stage the
// plan puts on this device), their optimizer, the memory account, and the
// executor of the schedule's actions for this device. Communication is
// implied by the actions exactly as in the simulator: a forward on a
// non-first virtual stage receives its input from the previous one, a
// backward on a non-last one receives its output gradient from the next.
// Sends are asynchronous; receives are posted one action ahead, so the
// executor never blocks a peer and cannot deadlock on a valid schedule.
class StageExecutor {
 public:
  using PG = c10::intrusive_ptr<compat::CommGroup>;
  // `placement`: where this stage computes and how its tensors reach the
  // transport (device_placement.h); the default is a CPU stage. `tensors`:
  // with parallel.tensor > 1, this worker's tensor rank and its group; the
  // stage then holds that rank's shard of its layers (tensor_parallel/).
  StageExecutor(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device, PG pg,
                TrainData& data, EventSink* sink = nullptr, StageDevice placement = {}, ReplicaSet replicas = {},
                TensorSet tensors = {});
  ~StageExecutor();

  // Runs this device's actions for one iteration (all microbatches and the
  // optimizer step). Returns the iteration's loss (mean over the batch) on
  // the device holding the last virtual stage, NaN elsewhere.
  double run_iteration(std::int64_t iteration);
  // This device holds the last virtual stage (its losses are the run's).
  bool computes_loss() const;
  // Schedules without a flush (PipeDream async 1F1B) run as one program
  // over iterations [first, iterations): no iteration boundary, an update
  // after every backward, weight stashing where a stage keeps > 1 version.
  // on_loss(iteration, loss) fires on the last stage's device.
  bool flushes() const;
  void run_async(std::int64_t first, std::int64_t iterations,
                 const std::function<void(std::int64_t, double)>& on_loss);
  // Forward-only pass over a data set; the classification accuracy on the
  // last stage's device, NaN elsewhere.
  double evaluate(const Dataset& test);

  std::vector<at::Tensor> parameters() const;
  // The parameters every tensor rank holds whole (all of them without
  // tensor parallelism): layer norms, row-parallel biases, embedding, head.
  std::vector<at::Tensor> replicated_parameters() const;
  StageMemory& memory();
  const StageDevice& placement() const;
  // Checkpoint: parameters and optimizer state.
  void save(const std::string& file) const;
  void load(const std::string& file);

  // For stage extensions (stage_extension.h; live migration): a layer's
  // module (null where another device owns it), the optimizer holding its
  // state, and exchanging the whole stage for one built with a new plan at
  // an iteration boundary (a flush: nothing in flight).
  torch::nn::Sequential layer(int l) const;
  torch::optim::Optimizer& optimizer();
  void swap(StageExecutor& other) noexcept { impl_.swap(other.impl_); }
  // Replaces the clock the stage's events are stamped with (by default the
  // one of its device, event_clock.h): tests run the GPU's deferred
  // stamping on CPU with it.
  void use_event_clock(std::unique_ptr<EventClock> clock);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The parameters in a file written by StageExecutor::save, in order.
std::vector<at::Tensor> load_stage_parameters(const std::string& file);

}  // namespace pw::rt
