#include "runtime/model_family.h"

#include "runtime/layers.h"
#include "runtime/torchscript/torchscript_family.h"

namespace pw::rt {

const ModelFamily& model_family(const JobSpec& job) {
  if (job.model.kind == "torchscript") return torchscript_models();
  return builtin_models();
}

const DataFamily* data_family(const std::string& kind) {
  if (kind == "tensors") return &tensor_files();
  return nullptr;
}

}  // namespace pw::rt
