#pragma once
#include <cstddef>

#include "core/model/layer_profile.h"

namespace pw {

// Planners split the layer order into contiguous ranges, but a branching
// graph can be cut in more ways than one fixed topological order allows:
// any chain of down-sets (sets closed under producers) D1 c ... c Dk is a
// valid k-stage pipeline, and that is the space PipeDream's optimizer
// searches (its antichain states). This reorders a graph profile
// (`inputs` set) so that the best contiguous split into `stages` ranges
// is the best split over all down-set chains, compute = forward +
// backward: it finds that chain (binary search on the slowest stage, a
// reachability pass over the down-set lattice) and lists D1, D2 \ D1, ...
// each in the original order. Chains, and graphs with more than
// `max_states` down-sets, come back unchanged. cut_bytes and inputs are
// recomputed for the new order.
ModelProfile order_for_stages(const ModelProfile& p, int stages, std::size_t max_states = 1'000'000);

// The same profile with its layers in `order` (a permutation that keeps
// every producer before its consumers).
ModelProfile reorder_layers(const ModelProfile& p, const std::vector<int>& order);

}  // namespace pw
