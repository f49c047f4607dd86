// B then W must compute exactly what one fused backward computes, layer by
// layer, for every layer kind the engine builds; and W must not redo B's
// work (the point of splitting).
#include <gtest/gtest.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

#include <set>

#include "core/spec/job_spec.h"
#include "runtime/layers.h"
#include "runtime/split_backward.h"

namespace pw::rt {
namespace {
namespace ag = torch::autograd;

nlohmann::json job_of(const nlohmann::json& model) {
  return {{"name", "split"},
          {"model", model},
          {"training", {{"batch_size", 2}, {"microbatch_size", 2}, {"seed", 3}}},
          {"cluster", {{"devices", 1}, {"device", "custom"}, {"memory_gb", 1}, {"tflops", 0.05}}}};
}

std::vector<nlohmann::json> models() {
  return {{{"kind", "mlp"}, {"input", 12}, {"widths", {16, 16}}, {"classes", 5}, {"precision", "fp32"}},
          {{"kind", "cnn"}, {"in_channels", 1}, {"image_size", 8}, {"channels", {4, 6}}, {"classes", 3},
           {"precision", "fp32"}},
          {{"kind", "gpt"}, {"layers", 1}, {"hidden", 16}, {"heads", 2}, {"seq_len", 8}, {"vocab", 256},
           {"ffn_mult", 2}, {"precision", "fp32"}}};
}

// Names of the nodes the autograd engine runs while `body` runs.
class NodeLog {
 public:
  void watch(const std::shared_ptr<ag::Node>& root) {
    std::vector<std::shared_ptr<ag::Node>> todo{root};
    while (!todo.empty()) {
      auto n = todo.back();
      todo.pop_back();
      if (!n || !seen_.insert(n.get()).second) continue;
      n->add_pre_hook(std::make_unique<Hook>(this, n->name()));
      for (auto& e : n->next_edges()) todo.push_back(e.function);
    }
  }
  std::multiset<std::string> ran;

 private:
  struct Hook : ag::FunctionPreHook {
    Hook(NodeLog* log, std::string name) : log(log), name(std::move(name)) {}
    ag::variable_list operator()(const ag::variable_list& g) override {
      log->ran.insert(name);
      return g;
    }
    NodeLog* log;
    std::string name;
  };
  std::set<const ag::Node*> seen_;
};

struct Pass {
  at::Tensor input_grad;
  std::vector<at::Tensor> param_grads;
  std::multiset<std::string> w_nodes;  // split only: what W ran
  bool replayed = false;
};

// One layer's backward on `x` with output gradient `g`: fused, or B then W.
Pass run_layer(torch::nn::Sequential& layer, const at::Tensor& x, bool grad_in, const at::Tensor& g, bool split) {
  for (auto& p : layer->parameters()) p.mutable_grad() = at::Tensor();
  at::Tensor in = grad_in ? x.detach().requires_grad_(true) : x;
  at::Tensor out = layer->forward(in);
  Pass r;
  if (!split) {
    torch::autograd::backward({out}, {g});
    if (grad_in) r.input_grad = in.grad();
  } else {
    SplitBackward sb;
    r.input_grad = sb.input_gradient(ag::impl::gradient_edge(out), g, grad_in ? in : at::Tensor(), layer->parameters());
    for (auto& p : layer->parameters()) EXPECT_FALSE(p.grad().defined()) << "B touched a weight gradient";
    EXPECT_FALSE(in.grad().defined()) << "B accumulated into the input leaf";
    r.replayed = sb.replays_segment();
    NodeLog log;
    log.watch(out.grad_fn());
    sb.weight_gradient();
    r.w_nodes = log.ran;
  }
  for (auto& p : layer->parameters()) r.param_grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  return r;
}

TEST(SplitBackward, BThenWIsBitwiseTheFusedBackwardForEveryLayerKind) {
  for (const auto& model : models()) {
    JobSpec job = parse_job(job_of(model));
    auto layers = build_layers(job);
    auto shapes = layer_boundary_shapes(layers, model_input_shape(job), model_takes_tokens(job));
    torch::manual_seed(11);
    at::Tensor x = model_takes_tokens(job) ? torch::randint(0, job.model.vocab, shapes[0], at::kLong)
                                           : torch::randn(shapes[0]);
    for (size_t l = 0; l < layers.size(); ++l) {
      SCOPED_TRACE(model["kind"].get<std::string>() + " layer " + std::to_string(l));
      bool grad_in = !(l == 0 && model_takes_tokens(job));
      at::Tensor g = torch::randn(shapes[l + 1]);
      Pass fused = run_layer(layers[l], x, grad_in, g, false);
      Pass split = run_layer(layers[l], x, grad_in, g, true);
      ASSERT_EQ(fused.input_grad.defined(), split.input_grad.defined());
      if (fused.input_grad.defined()) EXPECT_TRUE(at::equal(fused.input_grad, split.input_grad));
      ASSERT_EQ(fused.param_grads.size(), split.param_grads.size());
      for (size_t i = 0; i < fused.param_grads.size(); ++i) {
        ASSERT_TRUE(split.param_grads[i].defined()) << "parameter " << i << " got no gradient in W";
        EXPECT_TRUE(at::equal(fused.param_grads[i], split.param_grads[i])) << "parameter " << i;
      }
      // Where an input gradient exists, W starts from what B recorded.
      EXPECT_EQ(split.replayed, !grad_in);
      torch::NoGradGuard ng;
      x = layers[l]->forward(x);
    }
  }
}

// A GPT feed-forward block: W runs the weight branches only. The GELU and
// the input-gradient matmuls were B's; a replay from the output would run
// them again.
TEST(SplitBackward, WeightGradientDoesNotRedoTheInputGradient) {
  JobSpec job = parse_job(job_of(models()[2]));
  auto layers = build_layers(job);
  auto shapes = layer_boundary_shapes(layers, model_input_shape(job), model_takes_tokens(job));
  const size_t ffn = 2;  // embedding, attention, feed-forward, head
  torch::manual_seed(5);
  Pass split = run_layer(layers[ffn], torch::randn(shapes[ffn]), true, torch::randn(shapes[ffn + 1]), true);
  ASSERT_FALSE(split.replayed);
  EXPECT_FALSE(split.w_nodes.empty());
  for (const auto& n : split.w_nodes) EXPECT_EQ(n.find("Gelu"), std::string::npos) << n << " ran in W";
}

// A weight used twice along the input's path cannot start from recorded
// gradients without counting one twice: W replays, and is still exact.
TEST(SplitBackward, AWeightUsedTwiceReplaysAndStaysExact) {
  torch::manual_seed(2);
  torch::nn::Linear shared(8, 8);
  torch::nn::Sequential layer(shared, torch::nn::ReLU(), shared);
  at::Tensor x = torch::randn({3, 8}), g = torch::randn({3, 8});
  Pass fused = run_layer(layer, x, true, g, false);
  Pass split = run_layer(layer, x, true, g, true);
  EXPECT_TRUE(split.replayed);
  EXPECT_TRUE(at::equal(fused.input_grad, split.input_grad));
  for (size_t i = 0; i < fused.param_grads.size(); ++i) EXPECT_TRUE(at::equal(fused.param_grads[i], split.param_grads[i]));
}

TEST(SplitBackward, WeightGradientBeforeInputGradientIsRefused) {
  SplitBackward sb;
  EXPECT_THROW(sb.weight_gradient(), std::logic_error);
}

}  // namespace
}  // namespace pw::rt
