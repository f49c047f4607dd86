#include "core/plan/iteration_bound.h"

#include <algorithm>

namespace pw {

double iteration_lower_bound_ms(const PlanRequest& req) {
  if (!req.profile || req.stages < 1) return 0;
  double work = 0, chain = 0;
  for (const auto& l : req.profile->layers) {
    work += l.fwd_ms + l.bwd_ms;
    chain += l.fwd_ms + l.bwd_ms - weight_grad_ms(l);
  }
  double capacity = 0, fastest = 0;
  for (int d = 0; d < req.stages; ++d) {
    const double speed = req.slowdown.empty() ? 1.0 : 1.0 / req.slowdown.at(d);
    capacity += speed;
    fastest = std::max(fastest, speed);
  }
  const double throughput_bound = req.microbatches * work / capacity;
  // pipeline.schedule "auto" plans only flushing families (planner.h).
  const bool flush = req.auto_schedule || flushes(req.schedule);
  return flush ? std::max(throughput_bound, chain / fastest) : throughput_bound;
}

}  // namespace pw
