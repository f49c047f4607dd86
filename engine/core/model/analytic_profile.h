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

// parallel.tensor with a measured profile (job_plan.cpp): whether a
// measured layer is split over the tensor group, by its type (the analytic
// profile's attention, cross-attention and FFN blocks, whose names and
// types the engine's profiler keeps); embeddings, heads and every other
// layer stay whole.
bool tensor_splits_measured(const LayerProfile& layer);

// A layer measured at t = 1 priced at the job's parallel.tensor = t as
// the analytic profile prices its blocks: each phase's time above its
// dispatches (the device's microbatch rule, with_fixed) divided by t, W
// keeping its share of the backward, then the block's all-reduces of one
// [s, b, h] activation over the intra-node link added to the forward and
// the backward's B. Memory (activations, weights, optimizer state) is left
// as measured, an upper bound. Layers tensor_splits_measured refuses are
// left whole.
void split_measured_layer(const JobSpec& job, LayerProfile& layer);

}  // namespace pw
