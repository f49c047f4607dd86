#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/plan_order.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule_kind.h"

namespace pw {

// pipeline.schedule "generated" never slower than a hand-built order at the
// same memory (issue 43). A partition search sizes its plan for one order:
// a plan made for the unit-cost generated order (ZB-H1-like, deferring W's
// and their stash on the last devices) can be far from the partition 1F1B
// or ZB-V would get, and an order generated for it afterwards cannot win
// that back (bert24-4gpu: 194.8 samples/s against 1F1B's 251.9). So the
// plans the planner makes for each hand-built family of the placement are
// candidates too: each judged with the order generated for it, which on
// that plan is never slower than the family's own order (evaluate_plan
// simulates the hand-built orders beside it), and the fastest kept.

// The hand-built families of req's placement: one chunk 1f1b, zb-h1, zb-h2;
// a V zb-v, dualpipe-v (m >= 2p), v-half, v-min.
std::vector<ScheduleKind> placement_families(const PlanRequest& req);

// Of `plans` (partitions and policies made for any family of req's
// placement), the fastest under req (schedule Generated) with its order
// generated for it (evaluate_plan: feasible first, then shorter); a plan
// already carrying an order made for this request keeps it. Returned
// evaluated, its schedule "generated"; an empty plan if `plans` is empty.
// `search_budget`: the local search's for each order generated here.
// `beat_ms`: the time of a feasible plan the caller already has (auto's
// best family plan): a plan whose plan_work_bound_ms is above it, or above
// the fastest feasible plan judged here, gets no order, as no order on it
// can win (req.prune_orders; the bound leaves a 1e-6 margin for the
// simulator's rounding to ns); where every plan is skipped, an empty plan.
Plan best_generated(const PlanRequest& req, const std::vector<Plan>& plans, std::int64_t search_budget = kPlanOrderSearch,
                    double beat_ms = std::numeric_limits<double>::infinity());

// Orders best_generated has generated, and plans it skipped by their
// bound, on this thread since it started: counted, not timed, so tests
// hold the pruning to its saving.
struct GeneratedPlanWork {
  std::int64_t generated = 0;
  std::int64_t skipped = 0;
};
const GeneratedPlanWork& generated_plan_work();

}  // namespace pw
