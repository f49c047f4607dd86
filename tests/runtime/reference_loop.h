#pragma once
// The independent reference every engine test compares against: plain
// libtorch, all layers in one process, cross entropy over the last dimension
// (token-level for language models; labels -100 not scored, as masked LM
// needs), gradient accumulated over the microbatches, one Adam step per batch
// (clipped by torch's clip_grad_norm_, or skipped when a gradient is not
// finite, where the job asks). `device` (tests/gpu): the same loop with layers
// and batches there; the weights come back on the CPU. `shares` > 1 (data
// parallelism's reference, tests/runtime/test_data_parallel.cpp): the global
// batch's microbatches in that many contiguous shares, each share's gradient
// accumulated alone (its losses over its own microbatch count) and the step
// taking their mean; the same mathematics in DDP's summation order, which
// matters where a gradient is rounding noise (an attention key bias's is 0
// analytically) that Adam scales up to a step.
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <functional>
#include <vector>

#include "core/spec/job_spec.h"
#include "runtime/data.h"
#include "runtime/layers.h"

namespace pw::rt {

struct Reference {
  std::vector<double> losses;
  std::vector<at::Tensor> weights;
};

// `lr_at(iteration)`, when given, sets the learning rate of each step (the
// test's own closed form of a schedule); otherwise training.lr throughout.
inline Reference reference_loop(const JobSpec& job, const std::function<double(int)>& lr_at = {},
                                c10::Device device = c10::kCPU, int shares = 1) {
  auto layers = build_layers(job);
  for (auto& l : layers) l->to(device);
  std::vector<at::Tensor> params;
  for (auto& l : layers)
    for (auto& p : l->parameters()) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(job.training.lr));
  TrainData data(job);
  int m = job.pipeline.microbatches;
  const int per_share = m / shares;
  Reference r;
  for (int it = 0; it < job.training.iterations; ++it) {
    opt.zero_grad();
    double total = 0, share_total = 0;
    std::vector<at::Tensor> share_sum;
    for (int k = 0; k < m; ++k) {
      Batch b = data.microbatch(it, k);
      at::Tensor x = b.input.to(device);
      for (auto& l : layers) x = l->forward(x);
      at::Tensor loss =
          torch::nn::functional::cross_entropy(x.reshape({-1, x.size(-1)}), b.target.to(device).reshape({-1})) /
          (shares > 1 ? per_share : m);
      loss.backward();
      if (shares == 1) {
        total += loss.item<double>();
        continue;
      }
      share_total += loss.item<double>();
      if ((k + 1) % per_share != 0) continue;
      // A share ends: its gradient is set aside and the next starts afresh.
      total += share_total;
      share_total = 0;
      torch::NoGradGuard ng;
      for (size_t i = 0; i < params.size(); ++i) {
        at::Tensor g = params[i].grad().defined() ? params[i].grad() : at::zeros_like(params[i]);
        if (share_sum.size() <= i) share_sum.push_back(g.clone());
        else share_sum[i].add_(g);
        params[i].mutable_grad() = at::Tensor();
      }
    }
    if (shares > 1) {
      total /= shares;
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = share_sum[i].div_(shares);
    }
    if (lr_at)
      for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr_at(it));
    bool finite = true;
    for (auto& p : params) finite = finite && (!p.grad().defined() || p.grad().isfinite().all().item<bool>());
    if (!job.training.skip_nonfinite || finite) {
      if (job.training.clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(params, job.training.clip_grad_norm);
      opt.step();
    }
    r.losses.push_back(total);
  }
  for (auto& p : params) r.weights.push_back(p.detach().to(c10::kCPU).clone());
  return r;
}

}  // namespace pw::rt
