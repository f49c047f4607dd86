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
#include "runtime/tensor_parallel/vocab_cross_entropy.h"
#include "runtime/transformer_blocks.h"

namespace pw::rt {
namespace {
namespace nn = torch::nn;

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
  // different stages (tying them would need the two stages' gradients summed
  // every step, Megatron's embedding group, which the engine does not build).
  // With parallel.tensor both are split by vocabulary, each on its own
  // (tensor_parallel/vocab_layers.h).
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

at::Tensor pipeline_loss(const at::Tensor& logits, const at::Tensor& target, const TensorSet* vocab_split) {
  const bool tokens = logits.dim() == 3;
  const at::Tensor rows = tokens ? logits.reshape({-1, logits.size(-1)}) : logits;
  const at::Tensor labels = tokens ? target.reshape({-1}) : target;
  if (vocab_split && vocab_split->count > 1) return vocab_parallel_cross_entropy(rows, labels, *vocab_split);
  return torch::nn::functional::cross_entropy(rows, labels);
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
