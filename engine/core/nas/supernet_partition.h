#pragma once
#include <vector>

#include "core/nas/csp_policy.h"
#include "core/nas/search_space.h"
#include "core/nas/supernet_sim.h"

namespace pw::nas {

// Contiguous choice-layer ranges per stage that minimise the largest
// stage's expected per-subnet time (mean over each layer's candidates of
// forward + backward + update; the frozen stem counts on stage 0 and the
// head on the last stage). Exact DP. With several choices per layer a
// stage holds fewer layers when its candidates are heavier, which is also
// what keeps the per-stage prefetch volume balanced.
std::vector<StageSlots> partition_supernet(const SearchSpace& space, int stages);

// CSP's own partition (search_space.partition "csp"): from the balanced one,
// move one stage boundary by one layer at a time while the simulated CSP
// throughput of `in` on the first `probe` subnets of its sequence improves.
// The balanced partition ignores that a stage holds each subnet from its
// forward to its update, i.e. for the whole round trip downstream: stage
// 0's candidates stay claimed longest, the last stage's shortest, so fewer
// choice layers early can buy more subnets in flight for some imbalance.
// Deterministic (first-improvement hill climbing, boundaries in order);
// returns in.stages when no move beats it.
std::vector<StageSlots> refine_partition_for_csp(const SupernetSimInput& in, int probe = 200);

// Expected time of one layer for a uniformly sampled subnet.
double expected_layer_ms(const ChoiceLayer& layer);

}  // namespace pw::nas
