#include "core/plan/gpipe_planner.h"

#include "core/plan/minmax_partition.h"

namespace pw {

Plan GPipePlanner::plan(const PlanRequest& req) const {
  const auto& layers = req.profile->layers;
  std::vector<double> prefix(layers.size() + 1, 0);
  for (size_t l = 0; l < layers.size(); ++l) prefix[l + 1] = prefix[l] + 2 * layers[l].fwd_ms + layers[l].bwd_ms;
  Plan p;
  p.stages = minmax_partition(req.profile->size(), req.stages * req.chunks,
                              [&](int a, int b) { return prefix[b + 1] - prefix[a]; });
  p.policy.assign(layers.size(), MemoryPolicy::Recompute);
  return p;
}

}  // namespace pw
