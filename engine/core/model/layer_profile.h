#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/profile_host_costs.h"

namespace pw {

// A layer's times measured at one microbatch size (a row of a profile's
// per-size table).
struct MicrobatchTimes {
  int microbatch = 0;
  double fwd_ms = 0;
  double bwd_ms = 0;
  double bwd_weight_ms = -1;  // < 0: not measured apart
};

// What the planner and simulator know about one pipeline layer, for one
// microbatch. Analytic models, measured engine profiles and imported
// PipeDream profiles all produce this same structure.
struct LayerProfile {
  std::string name;
  std::string type;
  double fwd_ms = 0;
  double bwd_ms = 0;  // full backward: input gradient (B) + weight gradients (W)
  // The W share of bwd_ms when known (analytic from FLOPs, or measured
  // apart); < 0 when only the full backward was measured: weight_grad_ms()
  // splits it by the documented rule (docs/profiles.md).
  double bwd_weight_ms = -1;
  std::uint64_t activation_bytes = 0;  // saved for backward when activations are kept
  std::uint64_t input_bytes = 0;       // what recompute keeps instead: the layer's input
  std::uint64_t output_bytes = 0;      // sent downstream when a stage ends after this layer
  std::uint64_t param_bytes = 0;       // weights; gradients take the same again
  std::uint64_t optimizer_bytes = 0;   // optimizer state (Adam moments, fp32 master copy)
  double optimizer_ms = 0;             // optimizer step for this layer's parameters
  // Transient bytes the layer's backward needs on top of what its forward
  // kept (gradient buffers of its intermediates, e.g. a conv+relu+pool's
  // two full-size gradients). Measured profiles fill it; 0 when unknown.
  std::uint64_t workspace_bytes = 0;
  // How the times change with the microbatch (docs/profiles.md, "Costs per
  // microbatch size"). A table measured at several sizes wins: piecewise
  // linear between them, affine beyond. Without one, t(b) = alpha + beta * b
  // through the times above, alpha being these fixed parts (0: linear).
  std::vector<MicrobatchTimes> by_microbatch;
  double fwd_fixed_ms = 0;
  double bwd_fixed_ms = 0;
  // Parameter tensors the optimizer steps (each has a fixed cost besides
  // its bytes); 0 when unknown.
  int param_tensors = 0;
  // Tensor parallelism (parallel.tensor > 1, core/model/tensor_parallel.h):
  // the part of fwd_ms, and of bwd_ms (its B, the input gradient), that is
  // the tensor group's blocking all-reduces, and the bytes each rank
  // all-reduced in them per microbatch. 0 without tensor parallelism.
  double tensor_fwd_ms = 0;
  double tensor_bwd_ms = 0;
  std::uint64_t tensor_fwd_bytes = 0;
  std::uint64_t tensor_bwd_bytes = 0;
  // Selective recomputation (MemoryPolicy::Selective, Korthikanti et al.
  // 2022): the attention core's activations (softmax, its dropout mask,
  // the attention over V: the 5 a s^2 b term) it drops, and the forward
  // it recomputes for them before the backward (QK^T, softmax, dropout,
  // attention over V). 0 for layers without an attention core, where
  // Selective keeps everything.
  std::uint64_t core_activation_bytes = 0;
  double core_fwd_ms = 0;
};

// W (weight gradients) of one layer per microbatch; B is bwd_ms minus it.
// Unmeasured: a layer without weights has no W; a layer with weights splits
// its backward in half, as a matmul's input and weight gradients each cost
// one forward (2 x m x n x k FLOPs each).
inline double weight_grad_ms(const LayerProfile& l) {
  if (l.bwd_weight_ms >= 0) return l.bwd_weight_ms < l.bwd_ms ? l.bwd_weight_ms : l.bwd_ms;
  return l.param_bytes == 0 ? 0.0 : l.bwd_ms / 2;
}

// What a split backward's W (weight gradients) needs from its B until it
// runs, per microbatch: the activation B cannot free (docs/planners.md,
// "What B frees"). A weight gradient dW = X^T dY reads the weight layer's
// input X and its output gradient dY, which B computes (Zero Bubble, Qi et
// al. 2024, section 2: W depends only on B's output gradient and the stored
// input); everything else the forward kept for the input gradient (scores,
// softmax, masks, activation-function inputs) B frees. Only the linear
// layers' weight gradients wait for W, as in the Zero Bubble authors'
// Megatron-LM code (WeightGradStore keeps each linear layer's input and
// output gradient); layer norms' small weight gradients run within B. Per
// layer kind, with H the block's input (one [s,b,h] tensor, input_bytes):
//  - no weights (and not attention, and no W time measured): nothing, there
//    is no W;
//  - attention: 6 H: the QKV projection's input and its output gradient
//    (H + 3H), the output projection's (H + H);
//  - cross_attention: 7 H: Q's projection (H + H), K and V's (the encoder
//    output H + 2H), the output projection's (H + H);
//  - ffn (width multiple f): (2 + 2f) H: fc1's input and output gradient
//    (H + fH), fc2's (fH + H); f from what the block keeps, (5 + 4f) / 2 H
//    (Korthikanti et al. 2022's count, as the analytic profile keeps it),
//    at least 1;
//  - head: all it kept: its input and the logits, whose gradient is as large;
//  - conv3x3+relu+pool: the convolution's input and the gradient of its
//    output (before the ReLU and pool): input + (activation - input) / 2;
//  - any other layer with weights (linear, embedding, measured layers): its
//    input and output gradient, input_bytes + output_bytes.
std::uint64_t w_stash_bytes(const LayerProfile& l);

struct ModelProfile {
  std::vector<LayerProfile> layers;
  int microbatch_size = 1;
  std::string device;  // preset the costs were derived for or measured on
  std::string source;  // "analytic", "measured", "pipedream:<file>"
  // Bytes crossing the cut after layer i (size layers-1). Empty means a
  // chain: the cut carries layers[i].output_bytes. Branching graphs count
  // every tensor that crosses.
  std::vector<std::uint64_t> cut_bytes;
  // Data-flow graph of an imported graph profile: producers of each layer
  // (indices < its own). Empty means a chain. Exporters write it back.
  std::vector<std::vector<int>> inputs;
  // What loading assumed (profiled minibatch, device re-targeting); the
  // CLI prints these.
  std::vector<std::string> assumptions;
  // What `profile --in-situ` fitted on the host beside this profile's
  // compute (send hold, host time per action); absent when not measured.
  std::optional<ProfileHostCosts> host_costs;

  int size() const { return static_cast<int>(layers.size()); }
  // Whether some layer's times were measured at more than one microbatch size.
  bool has_microbatch_tables() const {
    for (const auto& l : layers)
      if (l.by_microbatch.size() > 1) return true;
    return false;
  }
  std::uint64_t boundary_bytes(int after_layer) const {
    if (after_layer < 0 || after_layer + 1 >= size()) return 0;
    return cut_bytes.empty() ? layers[after_layer].output_bytes : cut_bytes[after_layer];
  }
};

}  // namespace pw
