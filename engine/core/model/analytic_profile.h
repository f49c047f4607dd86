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

}  // namespace pw
