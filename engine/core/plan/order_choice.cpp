#include "core/plan/order_choice.h"

#include <algorithm>
#include <cmath>

namespace pw {
namespace {

bool same_plan(const Plan& a, const Plan& b) {
  if (a.stages.size() != b.stages.size() || a.policy != b.policy) return false;
  for (size_t s = 0; s < a.stages.size(); ++s)
    if (a.stages[s].first_layer != b.stages[s].first_layer || a.stages[s].last_layer != b.stages[s].last_layer)
      return false;
  return true;
}

// Feasible first, then the shorter simulated iteration.
bool faster(const Plan& a, const Plan& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.iteration_time_ms < b.iteration_time_ms * (1 - 1e-9);
}

}  // namespace

void PlanFinalists::offer(const Plan& plan, double ms) {
  if (keep_ <= 0) return;
  if (static_cast<int>(best_.size()) == keep_ && ms >= best_.back().first) return;
  for (const auto& [t, p] : best_)
    if (same_plan(p, plan)) return;
  auto at = std::upper_bound(best_.begin(), best_.end(), ms, [](double x, const auto& e) { return x < e.first; });
  best_.insert(at, {ms, plan});
  if (static_cast<int>(best_.size()) > keep_) best_.pop_back();
}

std::vector<Plan> PlanFinalists::plans() const {
  std::vector<Plan> out;
  for (const auto& [t, p] : best_) out.push_back(p);
  return out;
}

int order_finalists(const PlanRequest& req) {
  if (req.schedule != ScheduleKind::Generated || (req.chunks != 1 && req.chunks != 2) || req.order_candidates <= 1) return 0;
  return std::max(1, static_cast<int>(std::lround(req.order_candidates * std::min(1.0, req.search_effort))));
}

Plan choose_by_generated_order(const PlanRequest& req, const Plan& pick, const std::vector<Plan>& others) {
  Plan best = pick;
  evaluate_plan(req, best);
  for (const Plan& o : others) {
    if (same_plan(o, pick)) continue;
    Plan q = o;
    attach_generated_order(req, q, kFinalistOrderSearch);
    evaluate_plan(req, q, true);
    if (faster(q, best)) best = std::move(q);
  }
  return best;
}

}  // namespace pw
