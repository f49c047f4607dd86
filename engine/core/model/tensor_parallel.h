#pragma once
#include <cstdint>

#include "core/cluster/topology.h"

namespace pw {

// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019; Narayanan et al.
// SC'21) as the cost model sees it: each transformer layer split over a
// group of t devices of one node, attention by heads and the FFN by its
// width, column- then row-parallel. Per layer, two all-reduces of the
// [s, b, h] activations in the forward (after the attention's output
// projection and after the FFN's second linear layer) and two of their
// gradients in the backward (the "f" operators before the QKV projection
// and the first FFN layer), each blocking the compute that needs it.

// Megatron's per-layer activation bytes (Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models",
// arXiv 2205.05198, section 4, fp16) for s tokens, microbatch b, hidden h,
// a heads, tensor-parallel size t:
//   no parallelism          s b h (34 + 5 a s / h)
//   tensor parallel         s b h (10 + 24 / t + 5 a s / (h t))
//   + sequence parallel     s b h (34 / t + 5 a s / (h t))
// and with selective recomputation (the attention core's softmax, its
// dropout mask and the attention over V recomputed) the 5 a s / h term
// dropped. The analytic profile's attention and FFN blocks sum to these
// exactly (tests/core/test_tensor_parallel.cpp); this is their closed form.
double korthikanti_layer_activation_bytes(double s, double b, double h, double a, int t, bool sequence,
                                          bool selective);

// One all-reduce of `bytes` inside a tensor group of t devices (ring:
// 2 (t - 1) / t x bytes over the link and 2 (t - 1) latencies; with
// sequence parallelism a reduce-scatter + all-gather of the same volume
// and step count, so the same time).
double tensor_allreduce_ms(std::uint64_t bytes, int t, const LinkSpeed& link);

// The all-reduces one analytic block runs per microbatch (forward,
// backward), by its type: attention, cross-attention and FFN blocks one
// each way (a transformer layer's two are its attention's and its FFN's);
// the vocabulary-parallel embedding one forward (its partial lookups
// summed); the vocabulary-parallel head one backward (its input gradient
// summed). Other layers none.
struct TensorCollectives {
  int forward = 0;
  int backward = 0;
};
TensorCollectives tensor_collectives_of(const std::string& layer_type);

}  // namespace pw
