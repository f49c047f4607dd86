#pragma once
// What a stage's replicas agree on besides their gradients: the loss they
// report (the global batch's, their mean) and, every kReplicaCheckEvery
// iterations, that their weights are still bitwise one model.
#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/replica_layout.h"
#include "runtime/stage.h"

namespace pw::rt {

// Iterations between two checks of a stage's replicas' weights (documented
// in docs/engine.md): often enough to name the iteration a divergence began
// within, rare enough that hashing the parameters costs nothing.
inline constexpr std::int64_t kReplicaCheckEvery = 10;

// FNV-1a 64 over the parameters' bytes, in order (the CPU copy of each).
std::uint64_t weights_fnv1a(const std::vector<at::Tensor>& params);

// The mean of each replica's `value` (the loss of its share of the batch):
// the global batch's loss. NaN stays NaN.
double mean_over_replicas(const ReplicaSet& replicas, const StageDevice& placement, double value);

// Every replica's weight hash, gathered: returns the hashes by replica.
// Throws std::runtime_error naming the stage, the replicas that differ
// and the iteration when they are not all equal.
std::vector<std::uint64_t> check_replicas_agree(const ReplicaSet& replicas, const StageDevice& placement,
                                                 const WorkerRole& role, const std::vector<at::Tensor>& params,
                                                 std::int64_t after_iteration);

std::string hex64(std::uint64_t h);

}  // namespace pw::rt
