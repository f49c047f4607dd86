#pragma once
// Megatron-LM's conjugate operators around a tensor-parallel region
// (Shoeybi et al. 2019, section 3): f is the identity forward and an
// all-reduce of the gradient backward (entering the region: every rank's
// shard contributed to the input's gradient); g is an all-reduce forward
// (leaving the region: the row-parallel partial products summed) and the
// identity backward. Every rank of the group runs the same ops in the same
// order, so the collectives pair up without tags.
#include <ATen/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>  // c10d::ReduceOp

#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt {

// `x` reduced by `op` over the group (no autograd), its time and bytes in
// the set's TensorCommLog as an all-reduce of the forward or the backward.
// The one collective of the tensor group's layers and losses.
at::Tensor tensor_group_allreduce(const at::Tensor& x, const TensorSet& set, c10d::ReduceOp op, bool backward);

// f: identity forward, all-reduce (sum) of the gradient backward.
at::Tensor copy_to_tensor_group(const at::Tensor& x, const TensorSet& set);
// g: all-reduce (sum) forward, identity backward.
at::Tensor reduce_from_tensor_group(const at::Tensor& x, const TensorSet& set);

}  // namespace pw::rt
