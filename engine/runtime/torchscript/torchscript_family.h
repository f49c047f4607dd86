#pragma once
#include "runtime/model_family.h"

namespace pw::rt {

// A user's scripted nn.Sequential as a model family (model.kind
// "torchscript"), and the tensor file it trains on (data.kind "tensors"):
// docs/torchscript.md.
const ModelFamily& torchscript_models();
const DataFamily& tensor_files();

}  // namespace pw::rt
