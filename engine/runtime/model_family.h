#pragma once
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"
#include "runtime/data.h"

namespace pw::rt {

// What the engine needs of one kind of model (model.kind). The built-in
// models (mlp, cnn, gpt, bert: layers.cpp) and a user's TorchScript model
// (torchscript/torchscript_family.cpp) implement it, so the layer builder,
// the loader and the profiler never ask which kind they hold.
class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  // One module per pipeline layer, the boundaries of the job's profile.
  virtual std::vector<torch::nn::Sequential> layers(const JobSpec& job) const = 0;
  // One microbatch's input shape, batch dimension first.
  virtual std::vector<int64_t> input_shape(const JobSpec& job) const = 0;
  // True when the input is token ids (int64) rather than features.
  virtual bool takes_tokens(const JobSpec& job) const = 0;
  // The layers' names and costs as the planner knows them (same count).
  virtual std::vector<LayerProfile> profile_layers(const JobSpec& job) const = 0;
};

// A data kind (data.kind) that a feature reads rather than the loader's
// built-in ones (synthetic, fashion-mnist, text).
class DataFamily {
 public:
  virtual ~DataFamily() = default;
  virtual Dataset read(const JobSpec& job, bool test) const = 0;
};

// The one place that knows every family: the job's model kind's, and a
// data kind's (nullptr for the loader's built-in kinds).
const ModelFamily& model_family(const JobSpec& job);
const DataFamily* data_family(const std::string& kind);

}  // namespace pw::rt
