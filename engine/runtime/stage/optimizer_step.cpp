// The optimizer step: the scheduled learning rate, whole-pipeline gradient
// clipping and the non-finite check.
#include "runtime/stage/stage_impl.h"

#include "core/spec/learning_rate.h"
#include <torch/utils.h>
#include <cmath>

namespace pw::rt {

using namespace stage_impl;

// Gradient clipping and the non-finite check look at the whole model's
// gradient: every stage all-reduces its share (sum of squares, count of
// non-finite values) at its optimizer step, a synchronisation point of
// the pipeline (the ZB paper's post-validation would step optimistically
// and roll back instead; here the step waits for the slowest stage's last
// weight gradient, which a flush schedule's iteration ends with anyway).
// Then every stage scales by the same factor, or skips the same step.
// Returns false when the step is to be skipped.
bool StageExecutor::Impl::whole_pipeline_gradient_ok() {
  const auto& t = job.training;
  if (t.clip_grad_norm <= 0 && !t.skip_nonfinite) return true;
  double sum_sq = 0, nonfinite = 0;
  // Per-tensor norms, as torch::nn::utils::clip_grad_norm_ takes them, and
  // non-finite counts, all brought to the host in one copy (one wait on a
  // GPU, not two per tensor); summed there in double, in order, as before.
  std::vector<at::Tensor> norms, bad;
  // With tensor parallelism a whole (replicated) parameter's gradient is on
  // every rank of the group: it counts 1/t on each, so that the sum over
  // the group counts it once and every shard once.
  std::vector<double> weight;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (const auto& p = params[i]; p.grad().defined()) {
      // Widened per tensor (exactly, as item<double>() did): dtypes may differ.
      norms.push_back(p.grad().norm().to(at::kDouble));
      bad.push_back(p.grad().isfinite().logical_not().sum().to(at::kDouble));
      weight.push_back(tensors.count > 1 && !param_split[i] ? 1.0 / tensors.count : 1.0);
    }
  if (!norms.empty()) {
    at::Tensor host = at::cat({at::stack(norms), at::stack(bad)}).to(at::kCPU).contiguous();
    const double* v = host.data_ptr<double>();
    std::size_t k = norms.size();
    for (std::size_t i = 0; i < k; ++i) {
      sum_sq += weight[i] * v[i] * v[i];
      nonfinite += v[k + i];
    }
  }
  std::vector<at::Tensor> buf{to_wire(at::tensor({sum_sq, nonfinite}, at::kDouble), placement)};  // NCCL: on the GPU
  // The tensor group first (every rank then holds the same sum), then the pipeline.
  if (tensors.count > 1) tensors.group->allreduce(buf)->wait();
  messaging.messenger().allreduce(buf)->wait();
  sum_sq = buf[0][0].item<double>();
  nonfinite = buf[0][1].item<double>();
  if (t.skip_nonfinite && nonfinite > 0) return false;
  if (t.clip_grad_norm > 0) {
    double coef = t.clip_grad_norm / (std::sqrt(sum_sq) + 1e-6);
    if (coef < 1) {
      torch::NoGradGuard ng;
      for (auto& p : params)
        if (p.grad().defined()) p.mutable_grad().mul_(coef);
    }
  }
  return true;
}

// `progress`: iterations done before this step (fractional when stepping
// per microbatch), which sets the scheduled learning rate.
void StageExecutor::Impl::step(const ActiveSchedule& run, double progress) {
  messaging.wait_sends();  // communication, not the step's compute
  // The replicas' all-reduce too: the step starts once the last bucket is
  // in, as the simulator has it, so its wait is the stage's idle time
  // (explain's gradient_sync), not the step's. Clipping and the non-finite
  // check then act on the replicas' mean gradient, which every replica holds alike.
  if (replica_sync) replica_sync->finish(run);
  EventClock::Mark t0 = telemetry.mark();
  const double lr = learning_rate_at(job.training, progress);
  for (auto& group : optimizer->param_groups()) group.options().set_lr(lr);
  if (whole_pipeline_gradient_ok()) optimizer->step();
  optimizer->zero_grad();
  stepped = true;
  stash.new_version();
  update_static();
  telemetry.emit(run.event(EventKind::OptimizerStep, -1, -1), t0);
  telemetry.memory().check("optimizer step");
}

}  // namespace pw::rt
