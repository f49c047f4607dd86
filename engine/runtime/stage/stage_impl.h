#pragma once
// The state of a StageExecutor: what is the stage's own (its share of the
// model, the optimizer, the microbatches in flight) and the parts it is
// composed of, each owning its state behind a narrow interface:
// StageTelemetry (events, memory account), StageMessaging (transfers),
// WeightStash (PipeDream versions). The schedule being run is no member:
// each run hands an ActiveSchedule down (iteration.cpp, async_program.cpp).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/data.h"
#include "runtime/stage.h"
#include "runtime/stage/active_schedule.h"
#include "runtime/stage/gradient_sync.h"
#include "runtime/stage/microbatch_state.h"
#include "runtime/stage/stage_messaging.h"
#include "runtime/stage/stage_telemetry.h"
#include "runtime/stage/weight_stash.h"

namespace pw::rt {

struct StageExecutor::Impl {
  using ActiveSchedule = stage_impl::ActiveSchedule;
  using Dir = stage_impl::Dir;
  using LayerState = stage_impl::LayerState;
  using MicrobatchState = stage_impl::MicrobatchState;

  JobSpec job;
  Plan plan;
  const Schedule& schedule;  // the job's: where this device's layers are, whether it flushes
  int device, devices, vstages, microbatches;
  TrainData& data;
  // Where layers, batches and received tensors live; the memory meter and
  // the event clock follow its device (declared before `telemetry`).
  StageDevice placement;
  stage_impl::StageTelemetry telemetry;
  stage_impl::StageMessaging messaging;
  std::vector<torch::nn::Sequential> layers;  // all model layers; only ours are non-null
  std::vector<std::vector<int64_t>> shapes;   // layer input shapes (+ model output)
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<at::Tensor> params;
  // With parallel.tensor > 1: this rank's group, and per parameter whether
  // it is a shard (tensor_parallel/tensor_layers.h) or held whole.
  TensorSet tensors;
  std::vector<bool> param_split;
  std::vector<at::Tensor> buffers;  // batch-norm running statistics and the like: trained state too
  bool stepped = false;             // the optimizer holds state (the memory account counts it)
  stage_impl::WeightStash stash;
  // With replicas (parallel.data > 1): the gradients' all-reduce among them; null otherwise.
  std::unique_ptr<stage_impl::ReplicaGradientSync> replica_sync;
  stage_impl::MicrobatchStates state;
  // The last virtual stage's loss tensors, in forward order, with their
  // microbatch: read once per iteration (take_losses), not per microbatch,
  // so a GPU never waits for the host in the middle of an iteration.
  std::vector<std::pair<std::int64_t, at::Tensor>> losses;

  // stage_executor.cpp: construction, the static memory account.
  Impl(const JobSpec& j, const Plan& p, const Schedule& s, int d, PG g, TrainData& dt, EventSink* es, StageDevice pl,
       ReplicaSet replicas, TensorSet tensor_set);
  void update_static();
  bool computes_loss() const { return schedule.device_of_virtual_stage(vstages - 1) == device; }

  // forward_backward.cpp: a microbatch's passes under the memory policies.
  // The last virtual stage's forward leaves its loss tensor in `losses`.
  void forward(const ActiveSchedule& run, int mb, int chunk);
  MicrobatchState& state_of(int mb, int chunk, const char* what);
  torch::autograd::Edge output_root(const ActiveSchedule& run, MicrobatchState& st, LayerState& ls, int l, int first,
                                    int mb, int chunk);
  void release(LayerState& ls);
  void backward(const ActiveSchedule& run, int mb, int chunk);
  void backward_input(const ActiveSchedule& run, int mb, int chunk);
  void backward_weight(const ActiveSchedule& run, int mb, int chunk);
  // Split backward with swapped layers: W's stash (the graph's saved
  // tensors) back to the host after B, and onto the device before W.
  void offload_stash(const ActiveSchedule& run, MicrobatchState& st, int mb, int chunk);
  void reload_stash(const ActiveSchedule& run, MicrobatchState& st, int mb, int chunk);
  // The device's action after the one running (a flush iteration's; none
  // in the async program): B keeps its stash when its own W is next, as
  // the simulator does.
  std::optional<Action> next_action;

  // optimizer_step.cpp
  bool whole_pipeline_gradient_ok();
  void step(const ActiveSchedule& run, double progress);

  // iteration.cpp: one action of the run, `progress` for the step's
  // learning rate; a flush schedule's iteration; the losses it made.
  void run_action(const ActiveSchedule& run, const Action& a, double progress);
  double run_iteration(std::int64_t it);
  // The values of the loss tensors of microbatches in [from, to) (global
  // numbers), in forward order (one device-to-host read); they leave `losses`.
  std::vector<double> take_losses(std::int64_t from, std::int64_t to);
  // async_program.cpp, evaluation.cpp
  void run_async(std::int64_t first, std::int64_t iterations, const std::function<void(std::int64_t, double)>& on_loss);
  double evaluate(const Dataset& test);
};

}  // namespace pw::rt
