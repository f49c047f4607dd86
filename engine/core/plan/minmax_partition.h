#pragma once
#include <functional>
#include <vector>

#include "core/plan/plan.h"

namespace pw {

// Cost of a stage holding layers [a, b] (inclusive).
using RangeCost = std::function<double(int a, int b)>;

// Splits layers [0, layers) into exactly `parts` contiguous non-empty
// ranges minimising the largest range cost, by PipeDream's dynamic
// programme over (last layer, stages used): A[s][j] = min over k of
// max(A[s-1][k], cost(k+1, j)). Ties keep the earliest last split, as
// PipeDream's strict comparison does. O(parts x layers^2) cost calls.
// Returns the ranges; `bottleneck` receives the optimal largest cost.
std::vector<StageRange> minmax_partition(int layers, int parts, const RangeCost& cost, double* bottleneck = nullptr);

}  // namespace pw
