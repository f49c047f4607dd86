// The tensor-parallel shards of the transformer's blocks (tensor_layers.h).
#include "runtime/tensor_parallel/tensor_layers.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/functional/activation.h>
#include <torch/utils.h>

#include <string>

#include "core/spec/spec_error.h"
#include "core/spec/tensor_split.h"
#include "runtime/tensor_parallel/conjugate_ops.h"
#include "runtime/tensor_parallel/vocab_layers.h"
#include "runtime/transformer_blocks.h"

namespace pw::rt {
namespace {
namespace nn = torch::nn;

// Row-parallel linear: this rank's columns of the weight ([out, in / t]);
// the partial products are summed over the group (g), then the bias, whole,
// is added once, as the unsplit layer adds it.
struct RowParallelLinearImpl : nn::Cloneable<RowParallelLinearImpl> {
  RowParallelLinearImpl(std::int64_t in_shard, std::int64_t out, TensorSet set)
      : in_shard(in_shard), out(out), set(std::move(set)) {
    reset();
  }
  void reset() override {
    weight = register_parameter("weight", torch::empty({out, in_shard}));
    bias = register_parameter("bias", torch::empty({out}));
  }
  at::Tensor forward(const at::Tensor& x) {
    return reduce_from_tensor_group(torch::matmul(x, weight.t()), set) + bias;
  }
  std::int64_t in_shard, out;
  TensorSet set;
  at::Tensor weight, bias;
};
TORCH_MODULE(RowParallelLinear);

// Attention split by heads: ln whole, qkv column-parallel over this rank's
// heads, proj row-parallel.
struct TensorAttentionImpl : nn::Cloneable<TensorAttentionImpl> {
  TensorAttentionImpl(std::int64_t hidden, std::int64_t heads, bool causal, TensorSet set)
      : hidden(hidden), heads(heads), causal(causal), set(std::move(set)) {
    reset();
  }
  void reset() override {
    const std::int64_t part = hidden / set.count;
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    qkv = register_module("qkv", nn::Linear(hidden, 3 * part));
    proj = register_module("proj", RowParallelLinear(part, hidden, set));
  }
  at::Tensor forward(const at::Tensor& x) {
    return x + proj(attend(qkv(copy_to_tensor_group(ln(x), set)), heads / set.count, causal));
  }
  std::int64_t hidden, heads;
  bool causal;
  TensorSet set;
  nn::LayerNorm ln{nullptr};
  nn::Linear qkv{nullptr};
  RowParallelLinear proj{nullptr};
};
TORCH_MODULE(TensorAttention);

struct TensorFeedForwardImpl : nn::Cloneable<TensorFeedForwardImpl> {
  TensorFeedForwardImpl(std::int64_t hidden, std::int64_t width, TensorSet set)
      : hidden(hidden), width(width), set(std::move(set)) {
    reset();
  }
  void reset() override {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    up = register_module("up", nn::Linear(hidden, width / set.count));
    down = register_module("down", RowParallelLinear(width / set.count, hidden, set));
  }
  at::Tensor forward(const at::Tensor& x) { return x + down(torch::gelu(up(copy_to_tensor_group(ln(x), set)))); }
  std::int64_t hidden, width;
  TensorSet set;
  nn::LayerNorm ln{nullptr};
  nn::Linear up{nullptr};
  RowParallelLinear down{nullptr};
};
TORCH_MODULE(TensorFeedForward);

// Rows [k n / t, (k+1) n / t) of dimension `dim`, in each of `parts`
// equal blocks along it (qkv's q, k and v blocks each keep this rank's heads).
at::Tensor share(const at::Tensor& whole, int64_t dim, int parts, const TensorSet& set) {
  std::vector<at::Tensor> blocks;
  for (const at::Tensor& block : whole.chunk(parts, dim)) blocks.push_back(block.chunk(set.count, dim)[set.index]);
  return at::cat(blocks, dim);
}

void copy_norm(const nn::LayerNorm& to, const nn::LayerNorm& from) {
  copy_into_shard(to->weight, from->weight);
  copy_into_shard(to->bias, from->bias);
}

}  // namespace

void check_tensor_parallel(const JobSpec& job) {
  const int t = job.parallel.tensor;
  if (job.parallel.sequence)
    throw SpecError("parallel.sequence", "the engine runs tensor parallelism without sequence parallelism (the cost "
                                         "model and the simulator price it); set parallel.sequence to false");
  if (t <= 1) return;
  const ModelSpec& m = job.model;
  if (m.kind == "torchscript")
    throw SpecError("parallel.tensor", "a TorchScript model cannot be split over tensor ranks (its layers are opaque "
                                       "graphs, not linear layers the engine can shard); set parallel.tensor to 1");
  if (m.kind != "gpt" && m.kind != "bert")
    throw SpecError("parallel.tensor", "the engine splits the transformer models (gpt, bert) by attention heads and "
                                       "FFN width; a " + m.kind + " model cannot be split: set parallel.tensor to 1");
  // The one rule the job check and the planner's tensor search use
  // (core/spec/tensor_split.h): heads, FFN width and vocabulary, the last
  // split by vocab_layers.h and never padded.
  if (auto why = tensor_split_refusal(m, t)) throw SpecError("parallel.tensor", *why);
  // The migration agent rebuilds a stage's layers whole under a new plan;
  // moving shards between tensor groups is not built.
  if (job.runtime.present)
    throw SpecError("parallel.tensor", "live migration (the job's \"runtime\" section) moves whole layers and is not "
                                       "supported with tensor-parallel stages: set parallel.tensor to 1 or leave "
                                       "\"runtime\" out");
  if (job.pipeline.schedule == ScheduleKind::PipeDream)
    throw SpecError("parallel.tensor", "tensor-parallel stages run the flush schedules (gpipe, 1f1b, interleaved, "
                                       "the zero-bubble ones); pipeline.schedule \"pipedream\" is not supported "
                                       "with parallel.tensor > 1");
}

torch::nn::Sequential shard_layer(const torch::nn::Sequential& whole, const TensorSet& set) {
  if (set.count < 2) return whole;
  if (auto s = shard_vocab_layer(whole, set)) return s;
  if (whole->size() != 1) return whole;
  if (const auto* a = whole->ptr(0)->as<AttentionImpl>()) {
    TensorAttention s(a->hidden, a->heads, a->causal, set);
    copy_norm(s->ln, a->ln);
    copy_into_shard(s->qkv->weight, share(a->qkv->weight, 0, 3, set));
    copy_into_shard(s->qkv->bias, share(a->qkv->bias, 0, 3, set));
    copy_into_shard(s->proj->weight, share(a->proj->weight, 1, 1, set));
    copy_into_shard(s->proj->bias, a->proj->bias);
    return nn::Sequential(s);
  }
  if (const auto* f = whole->ptr(0)->as<FeedForwardImpl>()) {
    TensorFeedForward s(f->hidden, static_cast<std::int64_t>(f->mult) * f->hidden, set);
    copy_norm(s->ln, f->ln);
    copy_into_shard(s->up->weight, share(f->up->weight, 0, 1, set));
    copy_into_shard(s->up->bias, share(f->up->bias, 0, 1, set));
    copy_into_shard(s->down->weight, share(f->down->weight, 1, 1, set));
    copy_into_shard(s->down->bias, f->down->bias);
    return nn::Sequential(s);
  }
  return whole;
}

std::vector<bool> split_parameters(const torch::nn::Sequential& whole, const torch::nn::Sequential& shard) {
  const auto w = whole->parameters(), s = shard->parameters();
  std::vector<bool> out;
  for (std::size_t i = 0; i < s.size(); ++i) out.push_back(i >= w.size() || s[i].numel() != w[i].numel());
  return out;
}

}  // namespace pw::rt
