#include "core/plan/iteration_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cost/stage_cost.h"

namespace pw {

namespace {

// Whether layers (work w, in order) fit on stages 0..p-1 in order with
// stage k doing at most T / slow_k of work: left to right, each stage takes
// as many as it can (an empty stage allowed, which only relaxes the test).
// Taking the most first never hurts the stages after, so this is exact.
bool fits_in(const std::vector<double>& w, const std::vector<double>& slow, double T) {
  size_t l = 0;
  for (size_t k = 0; k < slow.size() && l < w.size(); ++k) {
    double used = 0;
    while (l < w.size() && (used + w[l]) * slow[k] <= T) used += w[l++];
  }
  return l == w.size();
}

}  // namespace

double busiest_device_work_ms(const PlanRequest& req) {
  if (!req.profile || req.stages < 1 || req.profile->layers.empty()) return 0;
  std::vector<double> w;
  for (const auto& l : req.profile->layers) w.push_back(l.fwd_ms + l.bwd_ms);
  std::vector<double> slow(static_cast<size_t>(req.stages), 1.0);
  if (!req.slowdown.empty())
    for (int d = 0; d < req.stages; ++d) slow[d] = req.slowdown.at(d);
  // "auto" may choose a V (two chunks per device), so only one chunk per
  // device, fixed, makes every device's layers one contiguous range.
  if (req.chunks == 1 && !req.auto_schedule) {
    // The least largest stage over contiguous partitions: bisection on T
    // over fits_in, whose infeasible end stays below the optimum.
    double lo = 0, hi = 0;
    for (double x : w) hi += x;
    hi *= *std::max_element(slow.begin(), slow.end());
    for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (fits_in(w, slow, mid) ? hi : lo) = mid;
    }
    return lo;
  }
  // Any placement: some device holds ceil(layers / devices) layers, at
  // least the smallest that many, at the fastest device's speed at best.
  const size_t k = (w.size() + static_cast<size_t>(req.stages) - 1) / static_cast<size_t>(req.stages);
  std::partial_sort(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), w.end());
  double least = 0;
  for (size_t i = 0; i < k; ++i) least += w[i];
  return least * *std::min_element(slow.begin(), slow.end());
}

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
  // The devices together, and the busiest device alone: every device runs
  // each microbatch's forward and backward of its own layers.
  double throughput_bound = req.microbatches * std::max(work / capacity, busiest_device_work_ms(req));
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

double plan_work_bound_ms(const PlanRequest& req, const Plan& plan) {
  const int p = req.stages, c = req.chunks;
  if (!req.profile || p < 1 || (c != 1 && c != 2) || !plan.replicas.empty() ||
      static_cast<int>(plan.stages.size()) != p * c || plan.layer_count() != req.profile->size())
    return 0;
  std::vector<double> busy(static_cast<size_t>(p), 0.0);
  for (int j = 0; j < p * c; ++j) {
    const int d = j < p ? j : 2 * p - 1 - j;
    const double slow = req.slowdown.empty() ? 1.0 : req.slowdown.at(static_cast<size_t>(d));
    busy[d] += stage_cost(*req.profile, plan.stages[j], plan.policy).compute_ms() * slow;
  }
  return req.microbatches * *std::max_element(busy.begin(), busy.end());
}

}  // namespace pw
