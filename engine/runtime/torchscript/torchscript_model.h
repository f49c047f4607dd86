#pragma once
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/plan/plan.h"
#include "core/spec/job_spec.h"
#include "runtime/torchscript/torchscript_info.h"

// A user's TorchScript model (model.kind "torchscript", docs/torchscript.md)
// as pipeline layers: every top-level child of the scripted module becomes
// one layer, so plans, schedules and memory policies apply unchanged.
namespace pw::rt {

// One child of the scripted module as a torch::nn::Module. Its parameters
// and buffers are registered under the child's names ('.' -> '_'), and are
// the very tensors the jit module holds: optimizer steps and checkpoint
// loads, done in place, are what a later torch.jit.save writes.
class TorchScriptLayerImpl : public torch::nn::Module {
 public:
  TorchScriptLayerImpl(torch::jit::Module child, std::string type);
  at::Tensor forward(const at::Tensor& x);
  void train(bool on = true) override;
  // A deep copy with its own tensors (PipeDream's weight stashing clones
  // layers): the copy's forward runs its own copy of the scripted child.
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;
  const std::string& type() const { return type_; }

 private:
  torch::jit::Module child_;
  std::string type_;
};
TORCH_MODULE(TorchScriptLayer);

// A loaded model checked to be a chain: its root module and its children
// in call order.
struct TorchScriptModel {
  torch::jit::Module root;
  std::vector<std::string> children;  // attribute names, in forward's call order
};
// Throws std::runtime_error (unloadable file, or not a chain of children).
TorchScriptModel load_torchscript_model(const std::string& path);

// The job's layers, in model order. Checks the declared input shape by
// running a zero batch through the children: a child that fails, or an
// output that is not [batch, model.classes] logits, is a SpecError naming
// the field (model.input.shape, model.classes) and the child.
std::vector<torch::nn::Sequential> load_torchscript_layers(const JobSpec& job);
// [microbatch_size, input.shape...].
std::vector<int64_t> torchscript_input_shape(const JobSpec& job);
at::TensorOptions torchscript_input_options(const JobSpec& job);

// Name (the child's) and type of every layer, costs zero: what the
// profiler fills in, since a user's model has no analytic profile.
std::vector<LayerProfile> torchscript_layer_names(const JobSpec& job);

// A torchscript job names no profile: measure its children with the
// engine's profiler (measure_profile), save the result to
// run_dir/profile.json (a temporary file when run_dir is empty) and point
// job.model.profile at it, so planning proceeds as for any measured model.
void ensure_torchscript_profile(JobSpec& job, const std::string& run_dir);

// Writes the model with the weights `layers` hold (layers from
// load_torchscript_layers of the same job) as TorchScript (torch.jit.save).
void save_torchscript(const JobSpec& job, const std::vector<torch::nn::Sequential>& layers,
                      const std::string& out);

// torch.jit.save of `m` to `out`, atomically, throwing (never aborting) on a
// failed write: every TorchScript file the engine writes goes through here.
void save_torchscript_module(const torch::jit::Module& m, const std::string& out);

// After a pipelined run: every worker r saved its stage in
// weights_dir/stage<r>.pt (StageExecutor::save: "p<i>", the parameters of
// its layers in layer order, a layer on the worker the job's schedule places
// its virtual stage).
// Gathers them into the model and writes `out` as TorchScript.
void export_trained_torchscript(const JobSpec& job, const Plan& plan, int devices, const std::string& weights_dir,
                                const std::string& out);

// Tensors saved from Python with torch.save: a dict {"inputs", "labels"}
// (optionally "test_inputs", "test_labels") or a tuple (inputs, labels).
// labels: int64 class ids, one per input row. Errors name the file and key.
struct TensorData {
  at::Tensor inputs, labels, test_inputs, test_labels;  // test_*: undefined when absent
};
TensorData load_tensor_file(const std::string& path);

}  // namespace pw::rt
