#include "runtime/migration/layer_state.h"
#include "runtime/torch_compat.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <sstream>
#include <stdexcept>

namespace pw::rt::migration {
namespace {

// libtorch keys per-parameter optimizer state by the tensor's impl address
// (a string of it in 1.13, the pointer in 2.x: runtime/torch_compat.h).
auto state_key(const at::Tensor& p) { return compat::optimizer_state_key(p); }

torch::nn::Sequential owned(StageExecutor& stage, int layer) {
  auto m = stage.layer(layer);
  if (!m) throw std::logic_error("layer " + std::to_string(layer) + " is not held by this stage");
  return m;
}

}  // namespace

std::string export_layer(StageExecutor& stage, int layer) {
  auto params = owned(stage, layer)->parameters();
  auto& state = stage.optimizer().state();
  torch::serialize::OutputArchive a;
  for (size_t i = 0; i < params.size(); ++i) {
    a.write("p" + std::to_string(i), params[i].detach());
    auto it = state.find(state_key(params[i]));
    if (it == state.end()) continue;
    torch::serialize::OutputArchive s;
    it->second->serialize(s);
    a.write("s" + std::to_string(i), s);
  }
  auto buffers = owned(stage, layer)->buffers();
  for (size_t i = 0; i < buffers.size(); ++i) a.write("b" + std::to_string(i), buffers[i].detach());
  std::ostringstream os;
  a.save_to(os);
  return os.str();
}

void import_layer(StageExecutor& stage, int layer, const std::string& blob, const std::string& optimizer) {
  auto params = owned(stage, layer)->parameters();
  std::istringstream is(blob);
  torch::serialize::InputArchive a;
  a.load_from(is);
  auto& state = stage.optimizer().state();
  torch::NoGradGuard ng;
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor t;
    if (!a.try_read("p" + std::to_string(i), t) || !t.sizes().equals(params[i].sizes()))
      throw std::runtime_error("migrated state of layer " + std::to_string(layer) + " does not match parameter " +
                               std::to_string(i));
    params[i].copy_(t);
    torch::serialize::InputArchive s;
    if (!a.try_read("s" + std::to_string(i), s)) {
      state.erase(state_key(params[i]));
      continue;
    }
    std::unique_ptr<torch::optim::OptimizerParamState> ps;
    if (optimizer == "adam")
      ps = std::make_unique<torch::optim::AdamParamState>();
    else
      ps = std::make_unique<torch::optim::SGDParamState>();
    ps->serialize(s);
    state[state_key(params[i])] = std::move(ps);
  }
  auto buffers = owned(stage, layer)->buffers();
  for (size_t i = 0; i < buffers.size(); ++i) {
    at::Tensor t;
    if (!a.try_read("b" + std::to_string(i), t) || !t.sizes().equals(buffers[i].sizes()))
      throw std::runtime_error("migrated state of layer " + std::to_string(layer) + " does not match buffer " +
                               std::to_string(i));
    buffers[i].copy_(t);
  }
}

void copy_layer(StageExecutor& from, StageExecutor& to, int layer) {
  auto src = owned(from, layer)->parameters();
  auto dst = owned(to, layer)->parameters();
  auto& s_state = from.optimizer().state();
  auto& d_state = to.optimizer().state();
  torch::NoGradGuard ng;
  for (size_t i = 0; i < dst.size(); ++i) {
    dst[i].copy_(src[i]);
    auto it = s_state.find(state_key(src[i]));
    if (it == s_state.end())
      d_state.erase(state_key(dst[i]));
    else
      d_state[state_key(dst[i])] = it->second->clone();
  }
  auto src_buffers = owned(from, layer)->buffers();
  auto dst_buffers = owned(to, layer)->buffers();
  for (size_t i = 0; i < dst_buffers.size(); ++i) dst_buffers[i].copy_(src_buffers[i]);
}

}  // namespace pw::rt::migration
