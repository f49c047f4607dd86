// A stage's gradients all-reduced over its replicas (gradient_sync.h).
#include "runtime/stage/gradient_sync.h"

#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/cost/gradient_sync.h"
#include "core/events/clock.h"
#include "core/job/job_plan.h"

namespace pw::rt::stage_impl {

ReplicaGradientSync::ReplicaGradientSync(const JobSpec& job, const Plan& plan, const Schedule& schedule, int device,
                           const std::vector<torch::nn::Sequential>& layers, ReplicaSet replicas,
                           const StageDevice& placement, StageTelemetry& telemetry)
    : replicas_(std::move(replicas)), placement_(placement), telemetry_(telemetry),
      microbatches_(schedule.microbatches()), per_microbatch_(!schedule.flushes()), backwards_(schedule.chunks(), 0) {
  if (!replicas_.group || replicas_.count < 2) throw std::invalid_argument("gradient sync needs a group of replicas");
  // The bucket rule reads parameter bytes per layer: those of the layers
  // built here (what is really sent), in the cost model's profile shape.
  ModelProfile profile;
  profile.layers.resize(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l)
    if (layers[l])
      for (const auto& p : layers[l]->parameters())
        profile.layers[l].param_bytes += static_cast<std::uint64_t>(p.numel() * p.element_size());
  const pw::GradientSync rule = gradient_sync(job);
  for (int c = 0; c < schedule.chunks(); ++c) {
    const int v = schedule.virtual_stage(device, c);
    if (v < 0 || v >= static_cast<int>(plan.stages.size())) continue;
    for (const SyncBucket& sb : sync_buckets(profile, plan.stages[v], rule, device, schedule.splits_backward(), {})) {
      Bucket b;
      b.chunk = c;
      b.first_layer = sb.first_layer;
      b.last_layer = sb.last_layer;
      b.bytes = static_cast<std::int64_t>(sb.bytes);
      for (int l = sb.first_layer; l <= sb.last_layer; ++l)
        for (const auto& p : layers[l]->parameters()) b.params.push_back(p);
      buckets_.push_back(std::move(b));
    }
  }
}

ReplicaGradientSync::~ReplicaGradientSync() = default;

bool ReplicaGradientSync::begins_last_backward(int chunk) {
  if (per_microbatch_) return false;
  return ++backwards_.at(chunk) == microbatches_;
}

void ReplicaGradientSync::layer_done(const ActiveSchedule& run, int chunk, int layer) {
  // The backward runs from the last layer back: a bucket is complete once
  // its first layer is.
  for (Bucket& b : buckets_)
    if (b.chunk == chunk && b.first_layer == layer && !b.work) start(run, b);
}

void ReplicaGradientSync::start(const ActiveSchedule& run, Bucket& b) {
  std::vector<at::Tensor> grads;
  grads.reserve(b.params.size());
  {
    torch::NoGradGuard ng;
    for (const auto& p : b.params)
      grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
    // A flattened copy: the transport reduces it in place while the stage
    // goes on (the gradients stay untouched until finish()).
    b.flat = {to_wire(at::cat(grads), placement_)};
  }
  b.started = telemetry_.mark();
  b.work = replicas_.group->allreduce(b.flat);
  b.completed_ns = std::make_shared<std::atomic<std::int64_t>>(0);
  // The transport's own thread says when the sum is there: the event ends
  // then, not when the step gets round to waiting for it.
  auto done = b.completed_ns;
  b.work->getFuture()->addCallback([done](c10::ivalue::Future&) { done->store(steady_now_ns()); });
  (void)run;
}

void ReplicaGradientSync::finish(const ActiveSchedule& run) {
  for (Bucket& b : buckets_)
    if (!b.work) start(run, b);
  torch::NoGradGuard ng;
  for (Bucket& b : buckets_) {
    b.work->wait();
    EventClock::Mark end = telemetry_.mark();
    // A host clock's marks are host times: the completion the transport saw.
    if (telemetry_.immediate() && b.completed_ns->load() > 0) end = std::min<EventClock::Mark>(end, b.completed_ns->load());
    at::Tensor sum = b.flat[0];
    sum.div_(replicas_.count);  // the mean: every replica divides the same sum alike
    std::int64_t off = 0;
    for (auto& p : b.params) {
      at::Tensor mean = sum.narrow(0, off, p.numel()).view(p.sizes());
      off += p.numel();
      if (p.grad().defined())
        p.mutable_grad().copy_(mean);
      else
        p.mutable_grad() = mean.to(p.device()).clone();
    }
    Event e = run.event(EventKind::AllReduce, -1, b.chunk, b.bytes);
    e.first_layer = b.first_layer;
    e.last_layer = b.last_layer;
    telemetry_.emit_span(e, b.started, end);
    b.work.reset();
    b.flat.clear();
  }
  std::fill(backwards_.begin(), backwards_.end(), 0);
}

}  // namespace pw::rt::stage_impl
