// The vocabulary-parallel embedding and head (vocab_layers.h).
#include "runtime/tensor_parallel/vocab_layers.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

#include <memory>

#include "runtime/tensor_parallel/conjugate_ops.h"
#include "runtime/transformer_blocks.h"

namespace pw::rt {
namespace {
namespace nn = torch::nn;

// The token embedding's rows of this rank (`tok`, named as in the whole
// layer) and the position embedding whole (`pos`).
struct VocabParallelEmbeddingImpl : nn::Cloneable<VocabParallelEmbeddingImpl> {
  VocabParallelEmbeddingImpl(VocabRange range, std::int64_t seq, std::int64_t hidden, TensorSet set)
      : range(range), seq(seq), hidden(hidden), set(std::move(set)) {
    reset();
  }
  void reset() override {
    tok = register_module("tok", nn::Embedding(range.count, hidden));
    pos = register_module("pos", nn::Embedding(seq, hidden));
  }
  at::Tensor forward(const at::Tensor& tokens) {
    const at::Tensor outside = tokens.lt(range.first).logical_or(tokens.ge(range.first + range.count));
    // Outside tokens look up row 0, then are zeroed: the lookup's backward
    // then adds nothing to row 0 for them.
    const at::Tensor part = tok(tokens.sub(range.first).masked_fill(outside, 0)).masked_fill(outside.unsqueeze(-1), 0);
    // One rank's row plus zeros from the others: the sum is the whole
    // lookup exactly. Its backward is the identity, each rank's rows
    // taking their own tokens' gradient.
    const auto positions = torch::arange(tokens.size(1), tokens.options().dtype(at::kLong));
    return reduce_from_tensor_group(part, set) + pos(positions).unsqueeze(0);
  }
  VocabRange range;
  std::int64_t seq, hidden;
  TensorSet set;
  nn::Embedding tok{nullptr}, pos{nullptr};
};
TORCH_MODULE(VocabParallelEmbedding);

// The head's projection, column-parallel over the vocabulary: this rank's
// rows of the weight and the bias; f makes the input's gradient the sum of
// every rank's share, whole on each.
struct VocabParallelLinearImpl : nn::Cloneable<VocabParallelLinearImpl> {
  VocabParallelLinearImpl(std::int64_t hidden, VocabRange range, TensorSet set)
      : hidden(hidden), range(range), set(std::move(set)) {
    reset();
  }
  void reset() override {
    weight = register_parameter("weight", torch::empty({range.count, hidden}));
    bias = register_parameter("bias", torch::empty({range.count}));
  }
  at::Tensor forward(const at::Tensor& x) { return torch::linear(copy_to_tensor_group(x, set), weight, bias); }
  std::int64_t hidden;
  VocabRange range;
  TensorSet set;
  at::Tensor weight, bias;
};
TORCH_MODULE(VocabParallelLinear);

at::Tensor rows(const at::Tensor& whole, VocabRange r) { return whole.narrow(0, r.first, r.count); }

}  // namespace

void copy_into_shard(const at::Tensor& to, const at::Tensor& from) {
  torch::NoGradGuard ng;
  to.copy_(from);
}

VocabRange vocab_range(std::int64_t vocab, const TensorSet& set) {
  const std::int64_t count = vocab / set.count;
  return {set.index * count, count};
}

torch::nn::Sequential shard_vocab_layer(const torch::nn::Sequential& whole, const TensorSet& set) {
  if (whole->size() == 1) {
    const auto* e = whole->ptr(0)->as<EmbeddingImpl>();
    if (!e) return nullptr;
    VocabParallelEmbedding s(vocab_range(e->vocab, set), e->seq, e->hidden, set);
    copy_into_shard(s->tok->weight, rows(e->tok->weight, s->range));
    copy_into_shard(s->pos->weight, e->pos->weight);
    return nn::Sequential(s);
  }
  // The head (layers.cpp): a layer norm, then the projection to the vocabulary.
  const auto* norm = whole->size() == 2 ? whole->ptr(0)->as<nn::LayerNormImpl>() : nullptr;
  const auto* proj = whole->size() == 2 ? whole->ptr(1)->as<nn::LinearImpl>() : nullptr;
  if (!norm || !proj) return nullptr;
  const VocabRange range = vocab_range(proj->options.out_features(), set);
  VocabParallelLinear out(proj->options.in_features(), range, set);
  copy_into_shard(out->weight, rows(proj->weight, range));
  copy_into_shard(out->bias, rows(proj->bias, range));
  nn::Sequential s;
  // Named as the whole head's items, so the parameters keep its names.
  s->push_back("0", nn::LayerNorm(std::dynamic_pointer_cast<nn::LayerNormImpl>(norm->clone())));
  s->push_back("1", out);
  return s;
}

}  // namespace pw::rt
