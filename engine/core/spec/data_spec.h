#pragma once
#include <cstdint>
#include <string>

namespace pw {

class JsonFields;
struct ModelSpec;

// The job's `data` object (see docs/engine.md), parsed by the core so that
// every command refuses the same data sections; the engine's loaders
// (engine/runtime/data) read the result.
struct DataSpec {
  std::string kind = "synthetic";  // synthetic | fashion-mnist | text | tensors
  std::string dir;                 // default per kind; kind "tensors": the torch.save file (data.path)
  std::int64_t train_samples = 0;  // 0: the whole training set
  std::int64_t test_samples = 0;   // 0: the whole test set
  std::int64_t synthetic_samples = 1024;
  bool eval = false;  // test accuracy after training
};

// Parses a present `data` object against the model it feeds. A job without
// one trains on synthetic data (the defaults above), whatever the model.
DataSpec parse_data(JsonFields f, const ModelSpec& model);

}  // namespace pw
