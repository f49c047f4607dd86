#include "runtime/layers.h"

#include <torch/nn/cloneable.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>
#include <torch/utils.h>

#include <cmath>

#include "core/spec/spec_error.h"
#include "core/model/analytic_profile.h"
#include "runtime/model_family.h"

namespace pw::rt {
namespace {
namespace nn = torch::nn;

// GPT-style blocks, split as the analytic profile splits a transformer:
// embedding, one attention and one FFN block per layer, the output head.
// Pre-norm residual blocks, no dropout (so recompute is exact).
// Cloneable so that weight stashing (async 1F1B) can copy any layer.
struct EmbeddingImpl : nn::Cloneable<EmbeddingImpl> {
  EmbeddingImpl(int vocab, int seq, int hidden) : vocab(vocab), seq(seq), hidden(hidden) { reset(); }
  void reset() override {
    tok = register_module("tok", nn::Embedding(vocab, hidden));
    pos = register_module("pos", nn::Embedding(seq, hidden));
  }
  at::Tensor forward(const at::Tensor& tokens) {
    auto positions = torch::arange(tokens.size(1), tokens.options().dtype(at::kLong));
    return tok(tokens) + pos(positions).unsqueeze(0);
  }
  int vocab, seq, hidden;
  nn::Embedding tok{nullptr}, pos{nullptr};
};
TORCH_MODULE(Embedding);

struct AttentionImpl : nn::Cloneable<AttentionImpl> {
  AttentionImpl(int hidden, int heads, bool causal) : hidden(hidden), heads(heads), causal(causal) { reset(); }
  void reset() override {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    qkv = register_module("qkv", nn::Linear(hidden, 3 * hidden));
    proj = register_module("proj", nn::Linear(hidden, hidden));
  }
  at::Tensor forward(const at::Tensor& x) {
    int64_t b = x.size(0), s = x.size(1), h = x.size(2), d = h / heads;
    auto parts = qkv(ln(x)).view({b, s, 3, heads, d}).permute({2, 0, 3, 1, 4});
    auto att = torch::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    if (causal) att = att.masked_fill(torch::ones({s, s}, x.options().dtype(at::kBool)).triu(1), -INFINITY);
    auto y = torch::matmul(torch::softmax(att, -1), parts[2]).permute({0, 2, 1, 3}).reshape({b, s, h});
    return x + proj(y);
  }
  int64_t hidden, heads;
  bool causal;
  nn::LayerNorm ln{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(Attention);

struct FeedForwardImpl : nn::Cloneable<FeedForwardImpl> {
  FeedForwardImpl(int hidden, int mult) : hidden(hidden), mult(mult) { reset(); }
  void reset() override {
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    up = register_module("up", nn::Linear(hidden, mult * hidden));
    down = register_module("down", nn::Linear(mult * hidden, hidden));
  }
  at::Tensor forward(const at::Tensor& x) { return x + down(torch::gelu(up(ln(x)))); }
  int hidden, mult;
  nn::LayerNorm ln{nullptr};
  nn::Linear up{nullptr}, down{nullptr};
};
TORCH_MODULE(FeedForward);

void transformer(const ModelSpec& m, std::vector<nn::Sequential>& out) {
  if (m.kind == "transformer")
    throw SpecError("model.kind", "the engine builds gpt and bert; encoder-decoder runs in the simulator only");
  bool causal = m.kind == "gpt";
  out.push_back(nn::Sequential(Embedding(m.vocab, m.seq_len, m.hidden)));
  for (int i = 0; i < m.layers; ++i) {
    out.push_back(nn::Sequential(Attention(m.hidden, m.heads, causal)));
    out.push_back(nn::Sequential(FeedForward(m.hidden, m.ffn_mult)));
  }
  // The engine keeps the head untied from the embedding: they may sit on
  // different stages.
  nn::Sequential head;
  head->push_back(nn::LayerNorm(nn::LayerNormOptions({m.hidden})));
  head->push_back(nn::Linear(m.hidden, m.vocab));
  out.push_back(head);
}

std::vector<torch::nn::Sequential> builtin_layers(const JobSpec& job) {
  const auto& m = job.model;
  torch::manual_seed(job.training.seed);
  std::vector<nn::Sequential> out;
  if (m.kind == "mlp") {
    std::vector<int> dims{m.input};
    dims.insert(dims.end(), m.widths.begin(), m.widths.end());
    dims.push_back(m.classes);
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      nn::Sequential s;
      if (i == 0) s->push_back(nn::Flatten());
      s->push_back(nn::Linear(dims[i], dims[i + 1]));
      if (i + 2 < dims.size()) s->push_back(nn::ReLU());
      out.push_back(s);
    }
  } else if (m.kind == "cnn") {
    int c = m.in_channels, hw = m.image_size;
    for (int o : m.widths) {
      nn::Sequential s;
      s->push_back(nn::Conv2d(nn::Conv2dOptions(c, o, 3).padding(1)));
      s->push_back(nn::ReLU());
      // Same rule as the analytic profile: pool while the map is >= 4 wide.
      if (hw >= 4) {
        s->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
        hw /= 2;
      }
      out.push_back(s);
      c = o;
    }
    nn::Sequential head;
    head->push_back(nn::Flatten());
    head->push_back(nn::Linear(c * hw * hw, m.classes));
    out.push_back(head);
  } else if (m.kind == "gpt" || m.kind == "bert" || m.kind == "transformer") {
    transformer(m, out);
  } else {
    throw SpecError("model.kind", "the engine builds mlp, cnn, gpt and bert models; \"" + m.kind +
                                      "\" runs only in the simulator");
  }
  return out;
}

std::vector<int64_t> builtin_input_shape(const JobSpec& job) {
  int64_t b = job.training.microbatch_size;
  const auto& m = job.model;
  if (m.kind == "cnn") return {b, m.in_channels, m.image_size, m.image_size};
  if (m.kind == "gpt" || m.kind == "bert") return {b, m.seq_len};
  return {b, m.input};
}

class BuiltinModels final : public ModelFamily {
 public:
  std::vector<torch::nn::Sequential> layers(const JobSpec& job) const override { return builtin_layers(job); }
  std::vector<int64_t> input_shape(const JobSpec& job) const override { return builtin_input_shape(job); }
  bool takes_tokens(const JobSpec& job) const override { return job.model.kind == "gpt" || job.model.kind == "bert"; }
  std::vector<LayerProfile> profile_layers(const JobSpec& job) const override { return analytic_profile(job).layers; }
};
}  // namespace

const ModelFamily& builtin_models() {
  static const BuiltinModels family;
  return family;
}

std::vector<torch::nn::Sequential> build_layers(const JobSpec& job) { return model_family(job).layers(job); }
std::vector<int64_t> model_input_shape(const JobSpec& job) { return model_family(job).input_shape(job); }
bool model_takes_tokens(const JobSpec& job) { return model_family(job).takes_tokens(job); }

at::Tensor pipeline_loss(const at::Tensor& logits, const at::Tensor& target) {
  if (logits.dim() == 3)
    return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
  return torch::nn::functional::cross_entropy(logits, target);
}

std::vector<std::vector<int64_t>> layer_boundary_shapes(std::vector<torch::nn::Sequential>& layers,
                                                        const std::vector<int64_t>& input_shape, bool tokens) {
  torch::NoGradGuard ng;
  std::vector<std::vector<int64_t>> shapes{input_shape};
  auto x = torch::zeros(input_shape, tokens ? at::kLong : at::kFloat);
  for (auto& l : layers) {
    // Eval mode: a zero batch must not update a BatchNorm's running stats.
    bool training = l->is_training();
    l->eval();
    x = l->forward(x);
    l->train(training);
    shapes.push_back(x.sizes().vec());
  }
  return shapes;
}

}  // namespace pw::rt
