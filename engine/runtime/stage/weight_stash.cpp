// Weight stashing (weight_stash.h).
#include "runtime/stage/weight_stash.h"

#include <torch/utils.h>

#include <set>

namespace pw::rt::stage_impl {

torch::nn::Sequential& WeightStash::layer_of(MicrobatchState& st, Layers& layers, int l, int first) {
  return st.stash ? st.stash->layers[l - first] : layers[l];
}

std::shared_ptr<Stash> WeightStash::for_forward(const ActiveSchedule& run, int chunk, const Layers& layers) {
  if (!run.async || run.schedule.weight_versions(run.device) <= 1) return nullptr;
  auto& cur = current_[chunk];
  if (cur) return cur;
  cur = std::make_shared<Stash>();
  const auto& r = run.layers_of(chunk);
  for (int l = r.first_layer; l <= r.last_layer; ++l) {
    auto c = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(layers[l]->clone());
    cur->layers.push_back(torch::nn::Sequential(c));
    for (auto& t : c->parameters()) cur->bytes += t.nbytes();
  }
  return cur;
}

void WeightStash::fold_gradients(MicrobatchState& st, const StageRange& r, const Layers& layers) {
  if (!st.stash) return;
  torch::NoGradGuard ng;
  std::vector<at::Tensor> from;
  for (auto& m : st.stash->layers)
    for (auto& t : m->parameters()) from.push_back(t);
  std::vector<at::Tensor> to;
  for (int l = r.first_layer; l <= r.last_layer; ++l)
    for (auto& t : layers[l]->parameters()) to.push_back(t);
  for (size_t i = 0; i < to.size(); ++i) {
    if (!from[i].grad().defined()) continue;
    if (to[i].grad().defined())
      to[i].mutable_grad().add_(from[i].grad());
    else
      to[i].mutable_grad() = from[i].grad().clone();
    from[i].mutable_grad() = at::Tensor();
  }
}

std::int64_t WeightStash::stashed_bytes(const MicrobatchStates& state) {
  std::set<Stash*> stashes;
  std::int64_t stashed = 0;
  for (auto& [k, st] : state)
    if (st.stash && stashes.insert(st.stash.get()).second) stashed += st.stash->bytes;
  return stashed;
}

}  // namespace pw::rt::stage_impl
