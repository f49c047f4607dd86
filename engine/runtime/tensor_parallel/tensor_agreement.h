#pragma once
// What a split stage's tensor ranks must keep equal: the parameters each
// holds whole (layer norms, the row-parallel biases, the position
// embedding; the token embedding and the head are vocabulary shards). Their
// gradients are bitwise one on every rank by construction (tensor_layers.h);
// checked every kReplicaCheckEvery iterations like a stage's replicas, so a
// divergence fails the run naming the stage and ranks, not a wrong model.
#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/replica_layout.h"
#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt {

// Throws std::runtime_error naming the stage, the tensor ranks that differ
// and the iteration when the ranks' `replicated` parameters differ by a bit.
void check_tensor_ranks_agree(const TensorSet& set, const WorkerRole& role, const std::vector<at::Tensor>& replicated,
                              std::int64_t after_iteration);

}  // namespace pw::rt
