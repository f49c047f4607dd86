#pragma once
#include "core/plan/planner.h"

namespace pw {

// Provably optimal plan for small instances. Objective: the least
// simulated iteration time over the plan space PipelineModel defines
// (every stage's peak_memory_bound within budget, swap traffic no longer
// than the stage's forward). Method: for every stage and layer range, all
// 3^k policies are enumerated and reduced to the Pareto front of
// (recompute ms, swap bytes) among those that fit; the simulator is
// monotone in both (fixed action orders, start = max of predecessors'
// ends), so a dominated policy is never faster. Partitions x fronts are
// searched depth-first, pruned by a lower bound on the simulated time
// (see exact_planner.cpp) against the incumbent, seeded with vpipe's plan;
// every surviving leaf is simulated. Throws for chunks > 1 and for
// instances whose enumeration exceeds a few million policies.
class ExactPlanner final : public Planner {
 public:
  std::string name() const override { return "exact"; }
  Plan plan(const PlanRequest& req) const override;
};

}  // namespace pw
