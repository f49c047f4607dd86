#pragma once
#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"

namespace pw {

// Per-layer costs derived from FLOPs, the transformer activation formula
// (Korthikanti et al.: s b h (34 + 5 a s / h) bytes per layer in fp16) and
// the job's device preset. Transformer-family models are split into VPipe's
// "blocks": embedding, one attention and one FFN block per layer (decoder
// layers add cross-attention), and the output head.
ModelProfile analytic_profile(const JobSpec& job);

// One layer from its FLOPs, activation bytes and parameter count, under
// the same conventions (device, precision, optimizer state) as
// analytic_profile. The NAS search spaces cost their candidate ops with it.
LayerProfile analytic_layer(const JobSpec& job, std::string name, std::string type, double fwd_flops,
                            double bwd_flops, double activation_bytes, double input_bytes, double output_bytes,
                            double params);

}  // namespace pw
