#pragma once
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/plan_order.h"
#include "core/plan/planner.h"

namespace pw {

// pipeline.schedule "generated" chosen with the partition (issue 28). A
// partition search judges plans by the unit-cost order's simulated time,
// but each plan runs the order generated for its own costs and memory,
// which can reverse a near tie: a partition the search ranked second may
// leave the order more to fill. So the search keeps its few best plans and
// the order decides among them.

// The `keep` best distinct plans (partition and policy) offered, by the
// time they were offered with, fastest first; ties keep the earlier.
class PlanFinalists {
 public:
  explicit PlanFinalists(int keep) : keep_(keep) {}
  void offer(const Plan& plan, double ms);
  std::vector<Plan> plans() const;

 private:
  int keep_;
  std::vector<std::pair<double, Plan>> best_;
};

// How many plans a search keeps for the order to decide among: none
// unless `req` is "generated" (one chunk or a V's two), else
// req.order_candidates scaled by req.search_effort (auto's share of the
// budget), at least 1.
int order_finalists(const PlanRequest& req);

// Of `pick` (the search's own choice) and `others`, the plan that is
// fastest as evaluate_plan judges it (its order generated for it and
// simulated, feasible first); `pick` on ties, so the result is never
// slower than `pick` with its order adapted after (`pick` gets the full
// search budget, exactly as when adapted after). The others' orders get a
// tenth of it (kFinalistOrderSearch): the ranking needs the order's shape,
// which the heuristic's candidates give, more than the local search's
// last few percent; a runner-up that wins keeps that order. Returned
// evaluated, with its order stored.
constexpr std::int64_t kFinalistOrderSearch = kPlanOrderSearch / 10;
Plan choose_by_generated_order(const PlanRequest& req, const Plan& pick, const std::vector<Plan>& others);

}  // namespace pw
