#include "core/plan/pipedream_planner.h"

#include <algorithm>
#include <stdexcept>

#include "core/plan/minmax_partition.h"
#include "core/plan/pipedream_hybrid.h"
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
  p.policy.assign(req.profile->size(), MemoryPolicy::Keep);
  const int data = std::max(1, req.sync.replicas);
  const int workers = req.sync.has_topology ? req.sync.topology.devices / data : 0;
  if (workers <= req.stages) {
    p.stages = pipedream_partition(*req.profile, req.stages, req.stages > 1 ? req.device.link_gbps : 0);
    return p;
  }
  if (!(req.device.link_gbps > 0))
    throw SpecError("cluster.link_gbps", "planner pipedream: replicating stages over spare devices needs a link "
                                                "speed for their all-reduce, got " +
                                                    std::to_string(req.device.link_gbps));
  HybridOptions o;
  o.workers = workers;
  o.bandwidth_gbps = req.device.link_gbps;
  o.stages = req.stages;
  const HybridPlan h = pipedream_hybrid(prefix_states(*req.profile), o);
  if (!h.feasible)  // fewer layers than stages: validate_plan names it
    throw SpecError("pipeline.stages", "planner pipedream: " + std::to_string(req.stages) + " stages over " +
                                           std::to_string(req.profile->size()) + " layers");
  p.data_parallel = data;
  for (const HybridStage& s : h.stages) {
    p.stages.push_back({s.from_state + 1, s.to_state});
    p.replicas.push_back(s.replicas * data);
  }
  return p;
}

}  // namespace pw
