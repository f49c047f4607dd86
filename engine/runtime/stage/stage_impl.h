#pragma once
// The state of a StageExecutor, shared by the files that implement it
// (engine/runtime/stage/): one file per job, all over this one struct. The
// schedule being run is no member: each run hands an ActiveSchedule down
// (iteration.cpp, async_program.cpp).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "runtime/data.h"
#include "core/schedule/comm_order.h"
#include "runtime/event_clock.h"
#include "runtime/memory.h"
#include "runtime/messenger.h"
#include "runtime/send_reaper.h"
#include "runtime/stage.h"
#include "runtime/stage/active_schedule.h"
#include "runtime/stage/microbatch_state.h"

namespace pw::rt {
namespace stage_impl {

enum Dir : int { kActivation = 0, kGradient = 1 };

struct Comm {
  std::vector<at::Tensor> buf;
  c10::intrusive_ptr<c10d::Work> work;
};

}  // namespace stage_impl

struct StageExecutor::Impl {
  using ActiveSchedule = stage_impl::ActiveSchedule;
  using Dir = stage_impl::Dir;
  using LayerState = stage_impl::LayerState;
  using Stash = stage_impl::Stash;
  using MicrobatchState = stage_impl::MicrobatchState;
  using Comm = stage_impl::Comm;

  JobSpec job;
  Plan plan;
  const Schedule& schedule;  // the job's: where this device's layers are, whether it flushes
  int device, devices, vstages, microbatches;
  PG pg;
  Messenger messenger;  // every tensor this stage sends or receives
  TrainData& data;
  EventSink* sink;
  // Where layers, batches and received tensors live; the memory meter and
  // the event clock follow its device (declared before `memory` and `clock`).
  StageDevice placement;
  std::vector<torch::nn::Sequential> layers;  // all model layers; only ours are non-null
  std::vector<std::vector<int64_t>> shapes;   // layer input shapes (+ model output)
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> buffers;  // batch-norm running statistics and the like: trained state too
  StageMemory memory;
  // Event times: marks on the compute device's timeline (event_clock.h).
  // Where they are not host times yet, the events wait in `pending` for the
  // iteration's end (flush_events), which converts them all at once.
  std::unique_ptr<EventClock> clock;
  struct PendingEvent {
    Event event;
    EventClock::Mark start, end;
  };
  std::vector<PendingEvent> pending;
  // The last virtual stage's loss tensors, in forward order, with their
  // microbatch: read once per iteration (take_losses), not per microbatch,
  // so a GPU never waits for the host in the middle of an iteration.
  std::vector<std::pair<std::int64_t, at::Tensor>> losses;
  stage_impl::MicrobatchStates state;
  std::map<std::tuple<int, int, int>, Comm> recvs;       // (dir, microbatch, chunk)
  // A hand-off between two chunks of this device (the fold of a V-shaped
  // schedule): no transfer, the tensor itself, keyed like `recvs`.
  std::map<std::tuple<int, int, int>, at::Tensor> local;
  SendReaper sends;
  // Ordered messaging: this device's steps of the program's comm order,
  // the next to post, and the outputs made but not yet posted.
  struct OrderedComm {
    const Schedule* program = nullptr;
    int microbatches = 0;
    std::int64_t limit = -1;
    std::vector<CommStep> steps;
    size_t next = 0;
    std::int64_t last_before = -1;
    std::map<std::tuple<int, int, int>, at::Tensor> outbox;  // (dir, microbatch, receiving virtual stage)
  } ordered;
  bool stepped = false;
  std::map<int, std::shared_ptr<Stash>> current_stash;  // chunk -> stash of the live weights

  // stage_executor.cpp: construction, the memory account, events.
  Impl(const JobSpec& j, const Plan& p, const Schedule& s, int d, PG g, TrainData& dt, EventSink* es, StageDevice pl);
  void update_static();
  // `e` ran from mark t0 (clock->mark()) to now.
  void emit(Event e, EventClock::Mark t0);
  void flush_events();
  // The values of the loss tensors of microbatches in [from, to), in
  // forward order (one device-to-host read); they leave `losses`.
  std::vector<double> take_losses(std::int64_t from, std::int64_t to);

  bool computes_loss() const { return schedule.device_of_virtual_stage(vstages - 1) == device; }

  // messaging.cpp: activations and gradients between virtual stages.
  int tag(const ActiveSchedule& run, Dir dir, int mb, int vstage) const;
  void post_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk);
  at::Tensor take_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk);
  void send(const ActiveSchedule& run, Dir dir, int mb, int chunk, const at::Tensor& t);
  void wait_sends();
  void prefetch(const ActiveSchedule& run, std::int64_t from, std::int64_t limit_mb = -1);
  void post_ordered(const ActiveSchedule& run, std::int64_t before, std::int64_t limit_mb);
  // The run's program has ended (all of it posted): the next one starts its
  // comm order afresh even where it is allocated where this one was.
  void end_program();

  // weight_stash.cpp: the weight version a microbatch runs with.
  torch::nn::Sequential& layer_of(MicrobatchState& st, int l, int first);
  std::shared_ptr<Stash> stash_for(const ActiveSchedule& run, int chunk);
  void fold_stash_gradients(MicrobatchState& st, const StageRange& r);

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

  // optimizer_step.cpp
  bool whole_pipeline_gradient_ok();
  void step(const ActiveSchedule& run, double progress);

  // iteration.cpp, async_program.cpp, evaluation.cpp
  // One action of the schedule, `progress` for the step's learning rate.
  void run_action(const ActiveSchedule& run, const Action& a, double progress);
  double run_iteration(std::int64_t it);
  void run_async(std::int64_t first, std::int64_t iterations, const std::function<void(std::int64_t, double)>& on_loss);
  double evaluate(const Dataset& test);
};

}  // namespace pw::rt
