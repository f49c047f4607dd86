#pragma once
// Tensor parallelism (parallel.tensor = t) of the built-in transformer's
// layers, Megatron-LM's layout: each attention block keeps heads
// [k h/t, (k+1) h/t) of the t ranks' k-th share (its q, k and v rows of the
// fused qkv, column-parallel) and the matching columns of the output
// projection (row-parallel); each FFN block keeps rows k of t of its up
// projection (column-parallel) and those columns of its down projection
// (row-parallel). f enters each block's parallel region, g leaves it
// (conjugate_ops.h): one all-reduce forward and one backward per block.
// The token embedding and the output head are split by vocabulary
// (vocab_layers.h). Layer norms, the row-parallel biases (added once, after
// the sum) and the position embedding stay whole on every rank; their
// gradients are the same on every rank (f's all-reduce made the gradient
// entering them whole), so the copies stay bitwise one.
#include <torch/nn/modules/container/sequential.h>

#include <vector>

#include "core/spec/job_spec.h"
#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt {

// Refuses, naming parallel.tensor (or parallel.sequence), a job whose model
// the engine cannot split: anything but the built-in gpt and bert (a
// TorchScript graph, a CNN, an MLP), heads, FFN width or vocabulary not
// divisible by t, sequence parallelism. Nothing for parallel.tensor 1.
void check_tensor_parallel(const JobSpec& job);

// The shard `set` holds of a layer built whole by build_layers (the same
// seed, so every rank and the unsplit reference start from one model): a
// transformer block becomes its tensor-parallel shard, the embedding and the
// head their vocabulary shards, any other layer is returned as it is
// (replicated). The shard's parameters keep the whole
// layer's names and order.
torch::nn::Sequential shard_layer(const torch::nn::Sequential& whole, const TensorSet& set);

// Per parameter of `shard` (shard_layer's result), whether it is split over
// the group (false: replicated, the same on every rank). Clipping counts a
// replicated gradient once, not t times.
std::vector<bool> split_parameters(const torch::nn::Sequential& whole, const torch::nn::Sequential& shard);

}  // namespace pw::rt
