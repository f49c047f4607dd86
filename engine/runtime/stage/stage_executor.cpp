// The StageExecutor itself: building this device's share of the model and
// its optimizer, what it accounts as staying between iterations, and the
// public interface over Impl (engine/runtime/stage/).
#include "runtime/stage/stage_impl.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <stdexcept>
#include <string>

#include "core/spec/messaging_spec.h"
#include "core/spec/optimizer_state.h"
#include "runtime/device_memory.h"
#include "runtime/layers.h"
#include "runtime/tensor_parallel/tensor_layers.h"

namespace pw::rt {

StageExecutor::Impl::Impl(const JobSpec& j, const Plan& p, const Schedule& s, int d, PG g, TrainData& dt,
                          EventSink* es, StageDevice pl, ReplicaSet replicas, TensorSet tensor_set)
    : job(j), plan(p), schedule(s), device(d), devices(s.devices()), vstages(s.virtual_stages()),
      microbatches(s.microbatches()), data(dt), placement(std::move(pl)),
      telemetry(d, static_cast<std::int64_t>(j.cluster.device.memory_bytes), placement, es),
      messaging(std::move(g), messaging_mode_from_string(cluster_messaging(j)).value(), placement, telemetry),
      tensors(std::move(tensor_set)) {
  if (tensors.count > 1) telemetry.watch_tensor_comm(tensors.log);
  if (static_cast<int>(plan.stages.size()) != vstages)
    throw std::invalid_argument("plan has " + std::to_string(plan.stages.size()) + " stages, schedule needs " +
                                std::to_string(vstages));
  StageMemory& memory = telemetry.memory();
  memory.set_baseline(memory.meter().live());
  layers = build_layers(job);
  if (static_cast<int>(layers.size()) != plan.layer_count())
    throw std::invalid_argument("plan covers " + std::to_string(plan.layer_count()) + " layers, model has " +
                                std::to_string(layers.size()));
  shapes = layer_boundary_shapes(layers, model_input_shape(job), model_takes_tokens(job));
  for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
    if (schedule.device_of_virtual_stage(plan.stage_of(l)) != device) {
      layers[l] = nullptr;
      continue;
    }
    // Built on the CPU from the job's seed (the same weights on any device),
    // split (this tensor rank's shard of the whole layer), then moved.
    std::vector<bool> split(layers[l]->parameters().size(), false);
    if (tensors.count > 1) {
      auto shard = shard_layer(layers[l], tensors);
      split = split_parameters(layers[l], shard);
      layers[l] = shard;
    }
    if (!placement.device.is_cpu()) layers[l]->to(placement.device);
    for (auto& t : layers[l]->parameters()) params.push_back(t);
    param_split.insert(param_split.end(), split.begin(), split.end());
    for (auto& t : layers[l]->buffers()) buffers.push_back(t);
  }
  const auto& t = job.training;
  if (t.optimizer == "adam")
    optimizer = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(t.lr));
  else
    optimizer = std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(t.lr).momentum(t.optimizer == "momentum" ? 0.9 : 0.0));
  if (replicas.count > 1) {
    // Flush schedules all-reduce once per iteration; PipeDream's async one
    // before every per-microbatch update (gradient_sync.h), so every
    // replica keeps the same weight versions and stashes.
    replica_sync = std::make_unique<stage_impl::ReplicaGradientSync>(job, plan, schedule, device, layers,
                                                                      std::move(replicas), placement, telemetry);
  }
  update_static();
  memory.meter().reset_peak();
  memory.check("model construction");
}

// What stays between iterations: the parameters, their gradients, the
// optimizer's state once it has stepped, the weight versions still in use.
void StageExecutor::Impl::update_static() {
  telemetry.update_static(params, stepped ? optimizer_states_per_param(job.training.optimizer) : 0,
                          stage_impl::WeightStash::stashed_bytes(state));
}

StageExecutor::StageExecutor(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device, PG pg,
                             TrainData& data, EventSink* sink, StageDevice placement, ReplicaSet replicas,
                             TensorSet tensors)
    : impl_(std::make_unique<Impl>(job, plan, schedule, device, std::move(pg), data, sink, std::move(placement),
                                   std::move(replicas), std::move(tensors))) {
  if (schedule.kind() == ScheduleKind::PipeDream && schedule.chunks() != 1)
    throw std::invalid_argument("async 1F1B runs with one chunk per device");
}
StageExecutor::~StageExecutor() = default;
double StageExecutor::run_iteration(std::int64_t it) {
  if (!impl_->schedule.flushes()) throw std::logic_error("async schedules run as one program: use run_async");
  return impl_->run_iteration(it);
}
bool StageExecutor::flushes() const { return impl_->schedule.flushes(); }
bool StageExecutor::computes_loss() const { return impl_->computes_loss(); }
void StageExecutor::run_async(std::int64_t first, std::int64_t iterations,
                              const std::function<void(std::int64_t, double)>& on_loss) {
  impl_->run_async(first, iterations, on_loss);
}
double StageExecutor::evaluate(const Dataset& test) { return impl_->evaluate(test); }
std::vector<at::Tensor> StageExecutor::parameters() const { return impl_->params; }
std::vector<at::Tensor> StageExecutor::replicated_parameters() const {
  std::vector<at::Tensor> out;
  for (std::size_t i = 0; i < impl_->params.size(); ++i)
    if (!impl_->param_split[i]) out.push_back(impl_->params[i]);
  return out;
}
StageMemory& StageExecutor::memory() { return impl_->telemetry.memory(); }
const StageDevice& StageExecutor::placement() const { return impl_->placement; }
// For stage extensions (stage_extension.h).
torch::nn::Sequential StageExecutor::layer(int l) const { return impl_->layers.at(l); }
torch::optim::Optimizer& StageExecutor::optimizer() { return *impl_->optimizer; }
void StageExecutor::use_event_clock(std::unique_ptr<EventClock> clock) {
  impl_->telemetry.use_clock(std::move(clock));
}

}  // namespace pw::rt
