// The StageExecutor itself: building this device's share of the model and
// its optimizer, the memory account of what stays between iterations, the
// events, and the public interface over Impl (engine/runtime/stage/).
#include "runtime/stage/stage_impl.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <set>
#include <stdexcept>
#include <string>

#include "core/spec/messaging_spec.h"
#include "core/spec/optimizer_state.h"
#include "runtime/device_memory.h"
#include "runtime/layers.h"

namespace pw::rt {

StageExecutor::Impl::Impl(const JobSpec& j, const Plan& p, const Schedule& s, int d, PG g, TrainData& dt,
                          EventSink* es, StageDevice pl)
    : job(j), plan(p), schedule(s), device(d), devices(s.devices()), vstages(s.virtual_stages()),
      microbatches(s.microbatches()), pg(std::move(g)),
      messenger(pg, messaging_mode_from_string(cluster_messaging(j)).value()), data(dt), sink(es),
      placement(std::move(pl)),
      memory(d, static_cast<std::int64_t>(j.cluster.device.memory_bytes), device_memory(placement.device)),
      clock(make_event_clock(placement.device)) {
  if (static_cast<int>(plan.stages.size()) != vstages)
    throw std::invalid_argument("plan has " + std::to_string(plan.stages.size()) + " stages, schedule needs " +
                                std::to_string(vstages));
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
    // Built on the CPU from the job's seed (the same weights on any device), then moved.
    if (!placement.device.is_cpu()) layers[l]->to(placement.device);
    for (auto& t : layers[l]->parameters()) params.push_back(t);
    for (auto& t : layers[l]->buffers()) buffers.push_back(t);
  }
  const auto& t = job.training;
  if (t.optimizer == "adam")
    optimizer = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(t.lr));
  else
    optimizer = std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(t.lr).momentum(t.optimizer == "momentum" ? 0.9 : 0.0));
  update_static();
  memory.meter().reset_peak();
  memory.check("model construction");
}

void StageExecutor::Impl::update_static() {
  std::int64_t p = 0, g = 0;
  for (auto& t : params) {
    p += t.nbytes();
    if (t.grad().defined()) g += t.grad().nbytes();
  }
  std::int64_t opt = stepped ? optimizer_states_per_param(job.training.optimizer) * p : 0;
  std::set<Stash*> stashes;
  std::int64_t stashed = 0;
  for (auto& [k, st] : state)
    if (st.stash && stashes.insert(st.stash.get()).second) stashed += st.stash->bytes;
  memory.set_static(p, g, opt, stashed);
}

void StageExecutor::Impl::emit(Event e, EventClock::Mark t0) {
  if (!sink) return;
  EventClock::Mark t1 = clock->mark();
  if (!clock->immediate()) {
    pending.push_back({e, t0, t1});
    return;
  }
  e.start_ns = clock->host_ns(t0);
  e.end_ns = clock->host_ns(t1);
  sink->on_event(e);
}

void StageExecutor::Impl::flush_events() {
  if (pending.empty()) return;
  clock->resolve();
  for (auto& p : pending) {
    p.event.start_ns = clock->host_ns(p.start);
    p.event.end_ns = clock->host_ns(p.end);
    sink->on_event(p.event);
  }
  pending.clear();
}

std::vector<double> StageExecutor::Impl::take_losses(std::int64_t from, std::int64_t to) {
  std::vector<at::Tensor> mine;
  std::vector<std::pair<std::int64_t, at::Tensor>> rest;
  for (auto& [mb, l] : losses) {
    if (mb >= from && mb < to)
      mine.push_back(l);
    else
      rest.emplace_back(mb, l);
  }
  losses = std::move(rest);
  if (mine.empty()) return {};
  // One copy of all of them: each float widens to the same double that
  // item<double>() gave per microbatch before.
  at::Tensor all = at::stack(mine).to(at::kCPU, at::kDouble).contiguous();
  const double* v = all.data_ptr<double>();
  return {v, v + all.numel()};
}

StageExecutor::StageExecutor(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device, PG pg,
                             TrainData& data, EventSink* sink, StageDevice placement)
    : impl_(std::make_unique<Impl>(job, plan, schedule, device, std::move(pg), data, sink, std::move(placement))) {
  if (schedule.kind() == ScheduleKind::AsyncOneFOneB && schedule.chunks() != 1)
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
StageMemory& StageExecutor::memory() { return impl_->memory; }
const StageDevice& StageExecutor::placement() const { return impl_->placement; }
// For stage extensions (stage_extension.h).
torch::nn::Sequential StageExecutor::layer(int l) const { return impl_->layers.at(l); }
torch::optim::Optimizer& StageExecutor::optimizer() { return *impl_->optimizer; }
void StageExecutor::use_event_clock(std::unique_ptr<EventClock> clock) {
  impl_->flush_events();
  impl_->clock = std::move(clock);
}

}  // namespace pw::rt
