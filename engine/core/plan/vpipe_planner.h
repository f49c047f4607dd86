#pragma once
#include "core/plan/partition_search.h"
#include "core/plan/planner.h"

namespace pw {

// VPipe's online joint search: layer partition plus per-layer memory
// policy (keep / recompute / swap). Global mode: binary search on the
// bottleneck period with a greedy partition whose stages each get the
// cheapest policy that fits their memory (so stages with more microbatches
// in flight recompute and swap more), then a least-fill layout at a few
// bottleneck levels, then hill climbing on simulated iteration time by
// moving boundary layers, then, judged by simulation, other Pareto-optimal
// policies for short stages and (models <= 32 layers) boundary moves with
// those policies re-chosen (docs/planners.md). Incremental mode (req.current): moves one
// boundary layer at a time from the plan in force while that improves the
// predicted iteration time by at least 1%, so live migration moves few
// layers; falls back to the global search when the current plan cannot be
// made to fit.
class VPipePlanner final : public Planner {
 public:
  std::string name() const override { return "vpipe"; }
  Plan plan(const PlanRequest& req) const override;
};

// A plan from a layout: each stage's policy from the model's solver.
Plan plan_from_layout(const PipelineModel& model, const Layout& ends);

}  // namespace pw
