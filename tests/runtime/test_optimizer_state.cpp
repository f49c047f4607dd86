// optimizer_states_per_param (core/spec/optimizer_state.h), the one count
// behind the memory meter, measured profiles and supernet candidates,
// against what torch's optimizers really keep after a step, built as the
// engine builds them (stage_executor.cpp).
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "core/spec/optimizer_state.h"

namespace pw {
namespace {

int kept_per_param(const std::string& kind) {
  at::Tensor p = torch::randn({3, 5}).requires_grad_(true);
  std::unique_ptr<torch::optim::Optimizer> o;
  if (kind == "adam") o = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{p}, torch::optim::AdamOptions(0.1));
  else
    o = std::make_unique<torch::optim::SGD>(std::vector<at::Tensor>{p},
                                            torch::optim::SGDOptions(0.1).momentum(kind == "momentum" ? 0.9 : 0.0));
  (p * p).sum().backward();
  o->step();
  int n = 0;
  for (auto& [key, state] : o->state()) {
    if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state.get())) {
      for (const at::Tensor& t : {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()})
        n += t.defined() && t.numel() == p.numel();
    } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      n += s->momentum_buffer().defined() && s->momentum_buffer().numel() == p.numel();
    }
  }
  return n;
}

TEST(OptimizerState, CountsWhatTorchKeepsPerParameter) {
  for (std::string kind : {"sgd", "momentum", "adam"}) EXPECT_EQ(optimizer_states_per_param(kind), kept_per_param(kind)) << kind;
}

}  // namespace
}  // namespace pw
