#pragma once
// The independent reference of PipeDream's async schedule with weight
// stashing (tests/runtime/test_equivalence.cpp, one pipeline, and
// test_replica_migration.cpp, replicas): plain libtorch, one process.
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <memory>
#include <vector>

#include "core/plan/plan.h"
#include "reference_loop.h"
#include "runtime/data.h"
#include "runtime/layers.h"

namespace pw::rt {

// PipeDream's semantics written out directly, on the replicas' union
// (one replica: the plain pipeline): on stage s (warm-up w = D - s - 1), microbatch k's forward and
// backward use the weights after max(0, k - w) updates, and each update
// applies the gradient of microbatch k over every replica's share of it.
// The engine averages the replicas' gradients of their own microbatch k
// (each the mean over its 4 samples) before the update: with equal shares
// that is the gradient of the mean over all 8, what the loop computes on
// the concatenated microbatch, so the two differ by summation order only.
inline Reference pipedream_reference(const JobSpec& job, int replicas = 1) {
  auto layers = build_layers(job);
  const int D = job.pipeline.stages, M = job.pipeline.microbatches;
  Plan plan = uniform_partition(static_cast<int>(layers.size()), D);
  std::vector<at::Tensor> params;
  for (auto& l : layers)
    for (auto& p : l->parameters()) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(job.training.lr));
  auto snapshot = [&] {
    std::vector<torch::nn::Sequential> s;
    for (auto& l : layers)
      s.push_back(torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(l->clone())));
    return s;
  };
  std::vector<std::vector<torch::nn::Sequential>> versions{snapshot()};
  std::vector<std::unique_ptr<TrainData>> data;
  for (int r = 0; r < replicas; ++r) {
    data.push_back(std::make_unique<TrainData>(job));
    data.back()->set_replica(r);
  }
  Reference out;
  const int total = job.training.iterations * M;
  double acc = 0;
  for (int k = 0; k < total; ++k) {
    std::vector<at::Tensor> inputs, targets;
    for (auto& d : data) {
      Batch b = d->microbatch(k / M, k % M);
      inputs.push_back(b.input);
      targets.push_back(b.target);
    }
    at::Tensor x = at::cat(inputs);
    std::vector<torch::nn::Sequential> used;
    for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
      const int w = D - plan.stage_of(l) - 1;
      used.push_back(versions[std::max(0, k - w)][l]);
      x = used.back()->forward(x);
    }
    at::Tensor loss = torch::nn::functional::cross_entropy(x, at::cat(targets));
    loss.backward();
    acc += loss.item<double>() / M;
    if (k % M == M - 1) {
      out.losses.push_back(acc);
      acc = 0;
    }
    size_t i = 0;
    for (auto& m : used)
      for (auto& p : m->parameters()) {
        params[i++].mutable_grad() = p.grad().clone();
        p.mutable_grad() = at::Tensor();
      }
    opt.step();
    opt.zero_grad();
    versions.push_back(snapshot());
  }
  for (auto& p : params) out.weights.push_back(p.detach().clone());
  return out;
}

}  // namespace pw::rt
