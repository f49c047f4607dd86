#pragma once
#include <vector>

#include "core/nas/csp_policy.h"
#include "core/nas/search_space.h"

namespace pw::nas {

// Contiguous choice-layer ranges per stage that minimise the largest
// stage's expected per-subnet time (mean over each layer's candidates of
// forward + backward + update; the frozen stem counts on stage 0 and the
// head on the last stage). Exact DP. With several choices per layer a
// stage holds fewer layers when its candidates are heavier, which is also
// what keeps the per-stage prefetch volume balanced.
std::vector<StageSlots> partition_supernet(const SearchSpace& space, int stages);

// Expected time of one layer for a uniformly sampled subnet.
double expected_layer_ms(const ChoiceLayer& layer);

}  // namespace pw::nas
