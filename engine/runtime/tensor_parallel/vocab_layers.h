#pragma once
// The vocabulary-parallel ends of the transformer (Megatron-LM's
// VocabParallelEmbedding and its column-parallel output layer): tensor rank
// k of t holds token rows [k V/t, (k+1) V/t) of the token embedding and of
// the head's projection (and bias), so each rank's share of both is
// V/t x hidden, as the cost model prices them (core/model/tensor_parallel.h).
//  - Embedding: a token outside the rank's rows looks up zeros; g (an
//    all-reduce, conjugate_ops.h) sums the ranks' partial lookups into the
//    whole one, then the position embedding, held whole (Megatron replicates
//    it too), is added once. Backward: each rank's rows get the gradient of
//    its own tokens' positions.
//  - Head: layer norm whole, f (identity forward, all-reduce of the input
//    gradient backward), then this rank's rows of the projection: its output
//    is the logits of its vocabulary shard [.., V/t], which only the
//    vocabulary-parallel loss reads (vocab_cross_entropy.h).
// The engine's head is not tied to the embedding (layers.cpp: they may sit
// on different stages), so the two shards are independent parameters.
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>

#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt {

// The token rows [first, first + count) rank `set.index` holds of a
// vocabulary of `vocab` (check_tensor_parallel refused a t not dividing it).
struct VocabRange {
  std::int64_t first = 0, count = 0;
};
VocabRange vocab_range(std::int64_t vocab, const TensorSet& set);

// The shard `set` holds of the embedding layer or the output head built
// whole (its parameters copied, names and order kept); nullptr for any
// other layer.
torch::nn::Sequential shard_vocab_layer(const torch::nn::Sequential& whole, const TensorSet& set);

// Writes `from` into a shard's parameter `to` outside autograd: how every
// shard (vocabulary rows here, heads and FFN columns in tensor_layers.cpp)
// takes its slice of the whole layer's weights.
void copy_into_shard(const at::Tensor& to, const at::Tensor& from);

}  // namespace pw::rt
