#include "core/calibrate/overhead_closure.h"

#include <cmath>

#include "core/job/job_plan.h"
#include "core/plan/planner.h"

namespace pw {

std::optional<double> close_action_overhead_us(const JobSpec& job, const Plan& plan, double measured_iteration_ms) {
  if (!(measured_iteration_ms > 0)) return std::nullopt;
  const ModelProfile profile = job_profile(job);
  PlanRequest req = plan_request(job, profile);
  auto simulated_ms = [&](double us) -> std::optional<double> {
    req.device.action_overhead_us = us;
    req.device.action_overhead_by_microbatch.clear();
    Plan p = plan;
    evaluate_plan(req, p, /*keep_order=*/true);
    if (!(p.iteration_time_ms > 0) || !std::isfinite(p.iteration_time_ms)) return std::nullopt;
    return p.iteration_time_ms;
  };
  auto at_zero = simulated_ms(0);
  if (!at_zero) return std::nullopt;
  if (*at_zero >= measured_iteration_ms) return 0.0;
  // Bracket it: from 1 ms per action, doubling; past 20 doublings (some
  // 1000 s per action) the run's time is not host time between actions.
  double lo = 0, hi = 1000;
  for (int i = 0;; ++i) {
    auto t = simulated_ms(hi);
    if (!t) return std::nullopt;
    if (*t >= measured_iteration_ms) break;
    if (i == 20) return std::nullopt;
    lo = hi;
    hi *= 2;
  }
  // To 0.1 us: a simulation is cheap, and a coarser stop would hand back
  // the bisection's round numbers wherever the iteration moves little with
  // the overhead.
  while (hi - lo > 0.1) {
    const double mid = 0.5 * (lo + hi);
    auto t = simulated_ms(mid);
    if (!t) return std::nullopt;
    if (*t < measured_iteration_ms) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace pw
