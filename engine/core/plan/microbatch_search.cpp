#include "core/plan/microbatch_search.h"

#include "core/plan/search_rows.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>

#include "core/schedule/schedule_kind.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"

namespace pw {

std::vector<int> microbatch_candidates(const JobSpec& job) {
  // Each replica splits its own share of the batch into microbatches.
  const int batch = job.replica_batch();
  std::vector<int> divisors;
  for (int b = 1; b <= batch && b <= bounds::kMicrobatchSize; ++b)
    if (batch % b == 0) divisors.push_back(b);
  std::vector<int> sizes;
  if (divisors.size() <= 8) {
    sizes = divisors;
  } else {
    for (int b : divisors)
      if ((b & (b - 1)) == 0 || b == batch) sizes.push_back(b);
  }
  const PipelineSpec& p = job.pipeline;
  std::vector<int> out;
  for (int b : sizes) {
    const int m = batch / b;
    if (m > bounds::kMicrobatches) continue;
    if (p.schedule == ScheduleKind::DualPipeV && m < 2 * p.stages) continue;
    if (p.schedule == ScheduleKind::Interleaved && m % p.stages != 0) continue;
    out.push_back(b);
  }
  return out;
}

void resolve_auto_microbatch(JobSpec& job, int b) {
  job.training.microbatch_size = b;
  job.pipeline.microbatches = job.replica_batch() / b;
  job.training.microbatch_size_auto = false;
  job.cluster.device.action_overhead_us = action_overhead_at(job.cluster.device, b);
  if (job.raw.is_object()) {
    job.raw["training"]["microbatch_size"] = b;
    auto pipeline = job.raw.find("pipeline");
    if (pipeline != job.raw.end() && pipeline->is_object() && pipeline->contains("microbatches"))
      (*pipeline)["microbatches"] = job.pipeline.microbatches;
  }
}

Plan search_microbatch(JobSpec& job, const std::function<Plan(const JobSpec&)>& plan_at,
                       const std::function<double(const JobSpec&)>& bound_at) {
  const std::vector<int> sizes = microbatch_candidates(job);
  if (sizes.empty())
    throw SpecError("training.microbatch_size", "\"auto\" found no microbatch size for batch_size " +
                                                    std::to_string(job.training.batch_size) + " that the schedule can run");
  struct Candidate {
    JobSpec job;
    double bound = 0;
  };
  std::vector<Candidate> order;
  for (int b : sizes) {
    Candidate c{job, 0};
    resolve_auto_microbatch(c.job, b);
    if (bound_at) c.bound = bound_at(c.job);
    order.push_back(std::move(c));
  }
  // The most promising first, so that the bound prunes as much as it can;
  // among equal bounds the larger size (the one a tie chooses).
  std::stable_sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    if (a.bound != b.bound) return a.bound < b.bound;
    return a.job.training.microbatch_size > b.job.training.microbatch_size;
  });
  std::vector<MicrobatchChoice> rows;
  Plan best;
  int best_b = 0;
  bool best_feasible = false;
  double best_ms = std::numeric_limits<double>::infinity();
  std::exception_ptr first_error;
  double planning_ms = 0;  // every size's: what choosing the size cost
  for (const Candidate& c : order) {
    const int b = c.job.training.microbatch_size;
    MicrobatchChoice row;
    row.microbatch_size = b;
    row.microbatches = c.job.pipeline.microbatches;
    row.lower_bound_ms = c.bound;
    // A tie keeps the larger size, so an equal bound prunes only a smaller one.
    if (best_feasible && (c.bound > best_ms || (c.bound == best_ms && b < best_b))) {
      row.pruned = true;
      row.reason = not_planned_reason(c.bound);
      rows.push_back(row);
      continue;
    }
    std::optional<Plan> planned = plan_candidate([&] { return plan_at(c.job); }, row.reason, first_error);
    if (!planned) {
      rows.push_back(row);
      continue;
    }
    Plan& plan = *planned;
    planning_ms += plan.planning_time_ms;
    row.iteration_time_ms = plan.iteration_time_ms;
    row.feasible = plan.feasible;
    row.reason = plan.reason;
    row.schedule = plan.schedule;
    for (const auto& s : plan.predicted) row.peak_memory_bytes = std::max(row.peak_memory_bytes, s.peak_memory_bytes);
    rows.push_back(row);
    // Feasible beats infeasible; then time; a tie takes the larger b.
    const bool better = best_b == 0 || (plan.feasible && !best_feasible) ||
                        (plan.feasible == best_feasible &&
                         (plan.iteration_time_ms < best_ms || (plan.iteration_time_ms == best_ms && b > best_b)));
    if (better) {
      best = plan;
      best_b = b;
      best_feasible = plan.feasible;
      best_ms = plan.iteration_time_ms;
    }
  }
  // No size could be planned: the reason is the job's, not the size's.
  if (best_b == 0) std::rethrow_exception(first_error);
  std::sort(rows.begin(), rows.end(),
            [](const MicrobatchChoice& a, const MicrobatchChoice& b) { return a.microbatch_size < b.microbatch_size; });
  resolve_auto_microbatch(job, best_b);
  best.microbatch_size = best_b;
  best.planning_time_ms = planning_ms;
  best.microbatch_search = rows;
  return best;
}

}  // namespace pw
