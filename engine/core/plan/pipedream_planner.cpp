#include "core/plan/pipedream_planner.h"

#include <algorithm>
#include <stdexcept>

#include "core/plan/minmax_partition.h"
#include "core/spec/spec_error.h"

namespace pw {

double pipedream_stage_ms(const ModelProfile& profile, int a, int b, double link_gbps) {
  double compute = 0;
  for (int l = a; l <= b; ++l) compute += profile.layers[l].fwd_ms + profile.layers[l].bwd_ms;
  if (link_gbps <= 0) return compute;
  double bytes_per_ms = link_gbps * 1e9 / 8.0 / 1e3;
  double in = a > 0 ? 2.0 * static_cast<double>(profile.boundary_bytes(a - 1)) / bytes_per_ms : 0;
  double out = b + 1 < profile.size() ? 2.0 * static_cast<double>(profile.boundary_bytes(b)) / bytes_per_ms : 0;
  return std::max({compute, in, out});
}

std::vector<StageRange> pipedream_partition(const ModelProfile& profile, int stages, double link_gbps,
                                            double* bottleneck_ms) {
  std::vector<double> prefix(profile.size() + 1, 0);
  for (int l = 0; l < profile.size(); ++l)
    prefix[l + 1] = prefix[l] + profile.layers[l].fwd_ms + profile.layers[l].bwd_ms;
  double bytes_per_ms = link_gbps * 1e9 / 8.0 / 1e3;
  // pipedream_stage_ms with prefix sums: the DP calls it O(stages x layers^2) times.
  auto cost = [&](int a, int b) {
    double t = prefix[b + 1] - prefix[a];
    if (link_gbps <= 0) return t;
    if (a > 0) t = std::max(t, 2.0 * static_cast<double>(profile.boundary_bytes(a - 1)) / bytes_per_ms);
    if (b + 1 < profile.size()) t = std::max(t, 2.0 * static_cast<double>(profile.boundary_bytes(b)) / bytes_per_ms);
    return t;
  };
  return minmax_partition(profile.size(), stages, cost, bottleneck_ms);
}

Plan PipeDreamPlanner::plan(const PlanRequest& req) const {
  if (req.chunks != 1)
    throw SpecError("pipeline.chunks", "planner pipedream: PipeDream has no interleaving, needs pipeline.chunks = 1, got " +
                                           std::to_string(req.chunks));
  Plan p;
  p.stages = pipedream_partition(*req.profile, req.stages, req.stages > 1 ? req.device.link_gbps : 0);
  p.policy.assign(req.profile->size(), MemoryPolicy::Keep);
  return p;
}

}  // namespace pw
