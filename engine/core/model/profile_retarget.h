#pragma once
#include <string>

#include "core/model/layer_profile.h"
#include "core/spec/device.h"

namespace pw {

// A profile at another microbatch size. Times follow each layer's table of
// measured sizes where it has one (piecewise linear, affine beyond), else
// alpha + beta * b through the profile's time with the layer's fixed part
// as alpha (zero fixed part: linear, as an old profile says). Activation,
// input, output and cut bytes scale linearly; parameters, optimizer state
// and the optimizer step stay. The rule used is recorded in `assumptions`.
// A profile whose microbatch is unknown (0) or equal is returned unchanged;
// `to` <= 0 means "as measured".
ModelProfile rescale_microbatch(const ModelProfile& p, int to);

// Whether a layer's time is bound by compute (matrix products:
// convolutions, linear/LSTM/attention/FFN/classifier layers) rather than
// memory bandwidth (normalisation, activations, pooling, dropout, adds,
// concatenations, embeddings' gathers). Decided from the layer's type.
bool compute_bound_layer(const LayerProfile& l);

// Re-targets a profile measured on `from` to `to`: compute-bound layers'
// forward and backward times scale by from.tflops / to.tflops, the others'
// by from.mem_bandwidth_gbs / to.mem_bandwidth_gbs, and the optimizer step
// (a memory stream) by the bandwidth ratio too. Bytes do not change.
// Records the rule and the ratios in `assumptions` and sets `device`.
ModelProfile retarget_profile(const ModelProfile& p, const DeviceSpec& from, const DeviceSpec& to);

}  // namespace pw
