#pragma once
#include <cstdint>

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

// A plan from a layout: each stage's policy from the model's solver,
// through the search's cache (the climbs simulate many layouts that share
// most of their stages).
Plan plan_from_layout(PartitionSearch& search, const Layout& ends);

// What vpipe's searches on this thread have cost since it started, counted
// rather than timed (a count is the same on every machine): tests hold the
// search to its budget with it, the benchmarks print it.
struct VPipeWork {
  std::int64_t searches = 0;     // plans made
  std::int64_t estimates = 0;    // layouts estimated (PartitionSearch)
  // The same, each times its layout's stages: what an estimate costs.
  std::int64_t stage_estimates = 0;
  std::int64_t climb_stage_estimates = 0;  // of which the estimate climbs'
  std::int64_t simulations = 0;            // plans simulated
  std::int64_t pipedream_seeds = 0;        // PipeDream DPs run for a seed (others repeat a kept one)
};
const VPipeWork& vpipe_work();

// vpipe's hill climb on the estimate (docs/planners.md, vpipe step 4) from
// `ends`, whose estimate is `est`: each round takes the move of a layer
// along a run of boundaries with the best estimate while that improves it
// (on small models, pairs of moves when no single one does). A round costs
// its moves x the stages in stage estimates and is taken whole within
// `budget` or not at all, so a climb with the budget makes the moves it
// always made, and one without stops where it got to. Returns the estimate
// reached (`ends` moved there) and the stage estimates spent in `spent`.
double climb_on_estimate(PartitionSearch& search, Layout& ends, double est, double budget,
                         double* spent = nullptr);

// The stage estimates the climbs on the estimate may spend in one search:
// a share of kClimbStageEstimates by req.search_effort, and never under
// kClimbFloor, so that a candidate of a large search (effort 1 / 500) still
// climbs from its seeds (docs/planners.md, "Search effort").
double climb_budget(const PlanRequest& req);
inline constexpr double kClimbStageEstimates = 2e8;
inline constexpr double kClimbFloor = 4e6;

}  // namespace pw
