#include "core/plan/generated_plan.h"

#include <algorithm>
#include <string>

#include "core/plan/iteration_bound.h"

namespace pw {
namespace {
thread_local GeneratedPlanWork work;
}  // namespace

const GeneratedPlanWork& generated_plan_work() { return work; }

std::vector<ScheduleKind> placement_families(const PlanRequest& req) {
  if (req.chunks == 1) return {ScheduleKind::OneFOneB, ScheduleKind::ZBH1, ScheduleKind::ZBH2};
  std::vector<ScheduleKind> out{ScheduleKind::ZBV};
  if (req.microbatches >= 2 * req.stages) out.push_back(ScheduleKind::DualPipeV);
  out.push_back(ScheduleKind::VHalf);
  out.push_back(ScheduleKind::VMin);
  return out;
}

Plan best_generated(const PlanRequest& req, const std::vector<Plan>& plans, std::int64_t search_budget, double beat_ms) {
  Plan best;
  bool have = false;
  for (const Plan& p : plans) {
    // No order on a plan busier than a plan already in hand can win.
    const double beat = have && best.feasible ? std::min(beat_ms, best.iteration_time_ms) : beat_ms;
    if (req.prune_orders && plan_work_bound_ms(req, p) * (1 - 1e-6) > beat) {
      ++work.skipped;
      continue;
    }
    Plan q = p;
    // An order stored for another schedule's request is none of ours: a
    // family's plan comes evaluated under its family (its schedule named,
    // no order); the planner's own plan for generated comes with the order
    // it was chosen by (schedule not yet named), made for this request.
    const bool ours = q.generated && (q.schedule.empty() || q.schedule == to_string(ScheduleKind::Generated));
    if (!ours) {
      ++work.generated;
      q.generated.reset();
      attach_generated_order(req, q, search_budget);
    }
    q.schedule = to_string(ScheduleKind::Generated);
    q.feasible = true;
    q.reason.clear();
    evaluate_plan(req, q, true);
    if (!have || (q.feasible && !best.feasible) ||
        (q.feasible == best.feasible && q.iteration_time_ms < best.iteration_time_ms * (1 - 1e-12))) {
      best = std::move(q);
      have = true;
    }
  }
  return best;
}

}  // namespace pw
