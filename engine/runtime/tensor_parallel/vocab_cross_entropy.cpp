// The vocabulary-parallel loss and argmax (vocab_cross_entropy.h).
#include "runtime/tensor_parallel/vocab_cross_entropy.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <limits>

#include "runtime/tensor_parallel/conjugate_ops.h"

namespace pw::rt {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr std::int64_t kNotScored = -100;  // torch's cross_entropy ignore_index default

// Per row of `logits` [N, V/t]: log(sum exp) - the target's logit, over the
// whole vocabulary (a target no rank holds, -100, scores 0 as its logit).
struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& target,
                            const TensorSet* set) {
    const std::int64_t count = logits.size(1), first = set->index * count;
    // The shift keeps exp finite; any value common to the ranks would do,
    // the whole row's maximum is what a whole softmax uses.
    const at::Tensor max = tensor_group_allreduce(std::get<0>(logits.max(1)), *set, c10d::ReduceOp::MAX, false);
    const at::Tensor shifted = logits - max.unsqueeze(1);
    const at::Tensor outside = target.lt(first).logical_or(target.ge(first + count));
    const at::Tensor local = target.sub(first).masked_fill(outside, 0);
    const at::Tensor picked = shifted.gather(1, local.unsqueeze(1)).squeeze(1).masked_fill(outside, 0);
    at::Tensor exp = shifted.exp();
    const at::Tensor sums = tensor_group_allreduce(at::stack({picked, exp.sum(1)}), *set, c10d::ReduceOp::SUM, false);
    const at::Tensor sum_exp = sums[1];
    exp.div_(sum_exp.unsqueeze(1));  // this shard's softmax, what the backward needs
    ctx->save_for_backward({exp, local, outside});
    return sum_exp.log() - sums[0];
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &softmax = saved[0], &local = saved[1], &outside = saved[2];
    // d loss / d logit = softmax - [logit is the target's].
    at::Tensor grad = softmax.clone();
    grad.scatter_add_(1, local.unsqueeze(1), outside.logical_not().to(grad.scalar_type()).neg().unsqueeze(1));
    grad.mul_(grads[0].unsqueeze(1));
    return {grad, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& target, const TensorSet& set) {
  const at::Tensor per_row = VocabParallelCrossEntropy::apply(logits, target, &set);
  // cross_entropy's mean: over the scored rows only.
  const at::Tensor scored = target.ne(kNotScored);
  return per_row.masked_fill(scored.logical_not(), 0).sum() / scored.sum().to(per_row.scalar_type());
}

at::Tensor vocab_parallel_argmax(const at::Tensor& logits, const TensorSet& set) {
  const std::int64_t count = logits.size(-1), first = set.index * count;
  const at::Tensor mine = logits.argmax(-1);
  const at::Tensor best = logits.gather(-1, mine.unsqueeze(-1)).squeeze(-1);
  const at::Tensor top = tensor_group_allreduce(best, set, c10d::ReduceOp::MAX, false);
  // Of the ranks holding the row's maximum, the lowest token: the first one.
  const at::Tensor candidate = (mine + first).masked_fill(best.ne(top), std::numeric_limits<std::int64_t>::max());
  return tensor_group_allreduce(candidate, set, c10d::ReduceOp::MIN, false);
}

}  // namespace pw::rt
