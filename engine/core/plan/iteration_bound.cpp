#include "core/plan/iteration_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pw {

bool static_memory_fits(const PlanRequest& req) {
  if (!req.profile || req.stages < 1 || req.device.memory_bytes == 0) return true;
  double bytes = 0;
  for (const auto& l : req.profile->layers) bytes += 2.0 * static_cast<double>(l.param_bytes) + static_cast<double>(l.optimizer_bytes);
  return bytes <= static_cast<double>(req.stages) * static_cast<double>(req.device.memory_bytes);
}

double iteration_lower_bound_ms(const PlanRequest& req) {
  if (!req.profile || req.stages < 1) return 0;
  if (!static_memory_fits(req)) return std::numeric_limits<double>::infinity();
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
  double throughput_bound = req.microbatches * work / capacity;
  // 1F1B and GPipe with one chunk per device and a full backward: stage k
  // starts only once the first microbatch's forwards before it ran, runs
  // its m microbatches' work m w_k, and its last backward still has to
  // pass back through the stages before it, so T >= S_k + m w_k for every
  // k (S_k: the work per microbatch of the stages before k). The partition
  // that minimises the largest of these equalises them: S_k = X (1 - (1 -
  // 1/m)^k), so T >= X = work / (1 - (1 - 1/m)^p), on equal devices (a
  // slowed one is left to the bound above). For equal stages (m + p - 1) x
  // work / p is exact; this is about (m + (p - 1) / 2) x work / p.
  const bool fill_drain = !req.auto_schedule && req.chunks == 1 && req.slowdown.empty() &&
                          (req.schedule == ScheduleKind::OneFOneB || req.schedule == ScheduleKind::GPipe);
  if (fill_drain && req.microbatches >= 1) {
    const double keep = 1.0 - 1.0 / req.microbatches;
    throughput_bound = std::max(throughput_bound, work / (1.0 - std::pow(keep, req.stages)));
  }
  // pipeline.schedule "auto" plans only flushing families (planner.h).
  const bool flush = req.auto_schedule || flushes(req.schedule);
  return flush ? std::max(throughput_bound, chain / fastest) : throughput_bound;
}

}  // namespace pw
