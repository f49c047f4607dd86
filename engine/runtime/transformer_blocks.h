#pragma once
// The built-in transformer's blocks (model.kind gpt and bert), split as the
// analytic profile splits a transformer: embedding, one attention and one
// FFN block per layer, the output head (layers.cpp). Pre-norm residual
// blocks, no dropout (so recompute is exact). Cloneable so that weight
// stashing (async 1F1B) can copy any layer. In a header because tensor
// parallelism (tensor_parallel/tensor_layers.h) shards these very modules.
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>

namespace pw::rt {

struct EmbeddingImpl : torch::nn::Cloneable<EmbeddingImpl> {
  EmbeddingImpl(int vocab, int seq, int hidden) : vocab(vocab), seq(seq), hidden(hidden) { reset(); }
  void reset() override {
    tok = register_module("tok", torch::nn::Embedding(vocab, hidden));
    pos = register_module("pos", torch::nn::Embedding(seq, hidden));
  }
  at::Tensor forward(const at::Tensor& tokens) {
    auto positions = torch::arange(tokens.size(1), tokens.options().dtype(at::kLong));
    return tok(tokens) + pos(positions).unsqueeze(0);
  }
  int vocab, seq, hidden;
  torch::nn::Embedding tok{nullptr}, pos{nullptr};
};
TORCH_MODULE(Embedding);

// Scaled dot-product attention over `heads` heads of `qkv` ([b, s, 3 x heads
// x d], laid out as [b, s, 3, heads, d]); returns [b, s, heads x d]. One
// definition for the whole block and its tensor-parallel shard (a shard is
// the same layout over its own heads).
inline at::Tensor attend(const at::Tensor& qkv, std::int64_t heads, bool causal) {
  const std::int64_t b = qkv.size(0), s = qkv.size(1), d = qkv.size(2) / (3 * heads);
  auto parts = qkv.view({b, s, 3, heads, d}).permute({2, 0, 3, 1, 4});
  auto att = torch::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
  if (causal) att = att.masked_fill(torch::ones({s, s}, qkv.options().dtype(at::kBool)).triu(1), -INFINITY);
  return torch::matmul(torch::softmax(att, -1), parts[2]).permute({0, 2, 1, 3}).reshape({b, s, heads * d});
}

struct AttentionImpl : torch::nn::Cloneable<AttentionImpl> {
  AttentionImpl(int hidden, int heads, bool causal) : hidden(hidden), heads(heads), causal(causal) { reset(); }
  void reset() override {
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    qkv = register_module("qkv", torch::nn::Linear(hidden, 3 * hidden));
    proj = register_module("proj", torch::nn::Linear(hidden, hidden));
  }
  at::Tensor forward(const at::Tensor& x) { return x + proj(attend(qkv(ln(x)), heads, causal)); }
  std::int64_t hidden, heads;
  bool causal;
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(Attention);

struct FeedForwardImpl : torch::nn::Cloneable<FeedForwardImpl> {
  FeedForwardImpl(int hidden, int mult) : hidden(hidden), mult(mult) { reset(); }
  void reset() override {
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    up = register_module("up", torch::nn::Linear(hidden, mult * hidden));
    down = register_module("down", torch::nn::Linear(mult * hidden, hidden));
  }
  at::Tensor forward(const at::Tensor& x) { return x + down(torch::gelu(up(ln(x)))); }
  int hidden, mult;
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear up{nullptr}, down{nullptr};
};
TORCH_MODULE(FeedForward);

}  // namespace pw::rt
