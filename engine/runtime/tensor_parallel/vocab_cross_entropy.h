#pragma once
// The loss and the prediction over logits split by vocabulary (the head of
// vocab_layers.h), Megatron-LM's vocab_parallel_cross_entropy: no rank ever
// holds a row's whole logits.
//  - Forward: the row maximum all-reduced (MAX) so every rank shifts by the
//    same value; the target's shifted logit (zero on ranks that do not hold
//    it) and the sum of exp over the shard all-reduced (SUM, one collective);
//    loss = log(sum exp) - target logit.
//  - Backward: softmax of the own shard (exp / the whole sum) minus one at
//    the target where this rank holds it, times the loss's gradient: each
//    rank the gradient of its own logits, with no communication.
#include <ATen/Tensor.h>

#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt {

// The mean cross entropy of `logits` ([N, V/t], rank `set.index`'s vocabulary
// shard) against whole-vocabulary targets [N], targets -100 not scored: what
// torch's cross_entropy gives for the whole [N, V] logits, on every rank.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& target, const TensorSet& set);

// The whole-vocabulary argmax over the last dimension of a vocabulary shard
// of logits (the first maximum on ties, as at::argmax), the same on every rank.
at::Tensor vocab_parallel_argmax(const at::Tensor& logits, const TensorSet& set);

}  // namespace pw::rt
