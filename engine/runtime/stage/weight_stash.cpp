// Weight stashing (PipeDream): which weight version a microbatch runs with,
// and the stashed version's gradients folded into the live weights' update.
#include "runtime/stage/stage_impl.h"

#include <torch/utils.h>

namespace pw::rt {

using namespace stage_impl;

torch::nn::Sequential& StageExecutor::Impl::layer_of(MicrobatchState& st, int l, int first) {
  return st.stash ? st.stash->layers[l - first] : layers[l];
}
// The weights a forward uses: live ones, or (async, > 1 version) a stash
// shared by every microbatch that starts before the next update.
std::shared_ptr<Stash> StageExecutor::Impl::stash_for(const ActiveSchedule& run, int chunk) {
  if (!run.async || run.schedule.weight_versions(run.device) <= 1) return nullptr;
  auto& cur = current_stash[chunk];
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

// The stashed version's gradients belong to the live weights' update.
void StageExecutor::Impl::fold_stash_gradients(MicrobatchState& st, const StageRange& r) {
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

}  // namespace pw::rt
