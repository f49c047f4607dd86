#pragma once
#include <string>

#include "runtime/stage.h"

namespace pw::rt::migration {

// Everything a layer's owner holds that is not rebuilt from the job seed:
// its parameters and its optimizer state (momentum, Adam moments and
// step), serialized with torch's archive format. Gradients are not moved:
// ownership switches right after an optimizer step, where they are zero.
std::string export_layer(StageExecutor& stage, int layer);
// Overwrites the layer's parameters and its optimizer state in `stage`,
// which must own the layer; `optimizer` is training.optimizer.
void import_layer(StageExecutor& stage, int layer, const std::string& blob, const std::string& optimizer);
// A layer that stays on this device: parameters and optimizer state copied
// in memory from the old executor into the new one (no serialization; the
// optimizer state tensors are shared: the old executor never steps again).
void copy_layer(StageExecutor& from, StageExecutor& to, int layer);

}  // namespace pw::rt::migration
