#include "runtime/torchscript/torchscript_family.h"

#include "core/spec/spec_error.h"
#include "runtime/torchscript/torchscript_model.h"

namespace pw::rt {
namespace {

class TorchScriptModels final : public ModelFamily {
 public:
  std::vector<torch::nn::Sequential> layers(const JobSpec& job) const override { return load_torchscript_layers(job); }
  std::vector<int64_t> input_shape(const JobSpec& job) const override { return torchscript_input_shape(job); }
  bool takes_tokens(const JobSpec& job) const override { return job.model.input_dtype == "int64"; }
  std::vector<LayerProfile> profile_layers(const JobSpec& job) const override { return torchscript_layer_names(job); }
};

class TensorFiles final : public DataFamily {
 public:
  Dataset read(const JobSpec& job, bool test) const override {
    const std::string& path = job.data.dir;
    TensorData t = load_tensor_file(path);
    if (!test) return {t.inputs, t.labels};
    if (!t.test_inputs.defined())
      throw SpecError("data.path", path + ": no \"test_inputs\"/\"test_labels\" tensors to evaluate on");
    return {t.test_inputs, t.test_labels};
  }
};

}  // namespace

const ModelFamily& torchscript_models() {
  static const TorchScriptModels family;
  return family;
}

const DataFamily& tensor_files() {
  static const TensorFiles family;
  return family;
}

}  // namespace pw::rt
