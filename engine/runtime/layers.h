#pragma once
#include <torch/nn/modules/container/sequential.h>

#include <vector>

#include "core/spec/job_spec.h"

namespace pw::rt {

// One torch module per pipeline layer, in the same order and with the same
// boundaries as analytic_profile() so a plan's layer indices apply. All
// layers are built from one seed in model order, so every worker (and a
// single-process reference loop) gets identical initial weights.
// Throws SpecError for model kinds or sizes the engine cannot build.
std::vector<torch::nn::Sequential> build_layers(const JobSpec& job);

// Shape of one microbatch's input to the model (batch dimension first).
std::vector<int64_t> model_input_shape(const JobSpec& job);

// True when the model's input is token ids (int64) rather than features.
bool model_takes_tokens(const JobSpec& job);

class ModelFamily;  // runtime/model_family.h
// The built-in models (mlp, cnn, gpt, bert) as a family; the three calls
// above ask the job's family (model_family()).
const ModelFamily& builtin_models();

struct TensorSet;  // runtime/tensor_parallel/tensor_set.h
// The training loss on the last layer's output: cross entropy over classes,
// or over tokens for [b, s, vocab] logits (labels -100 are not scored, as
// masked LM needs). One definition for the engine and the profiler. With
// `vocab_split` (a group of 2 or more), `logits` are the group's rank's
// vocabulary shard [b, s, vocab / t] (tensor_parallel/vocab_layers.h) and
// the loss is the vocabulary-parallel one, the same value on every rank.
at::Tensor pipeline_loss(const at::Tensor& logits, const at::Tensor& target, const TensorSet* vocab_split = nullptr);

// Input shape of every layer plus the model's output shape (size layers+1),
// found by running a zero microbatch through the layers without autograd.
std::vector<std::vector<int64_t>> layer_boundary_shapes(std::vector<torch::nn::Sequential>& layers,
                                                        const std::vector<int64_t>& input_shape, bool tokens);

}  // namespace pw::rt
