#include "core/plan/microbatch_search.h"

#include <algorithm>
#include <exception>
#include <limits>

#include "core/schedule/schedule_kind.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"

namespace pw {

std::vector<int> microbatch_candidates(const JobSpec& job) {
  const int batch = job.training.batch_size;
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
  job.pipeline.microbatches = job.training.batch_size / b;
  job.training.microbatch_size_auto = false;
  if (job.raw.is_object()) {
    job.raw["training"]["microbatch_size"] = b;
    auto pipeline = job.raw.find("pipeline");
    if (pipeline != job.raw.end() && pipeline->is_object() && pipeline->contains("microbatches"))
      (*pipeline)["microbatches"] = job.pipeline.microbatches;
  }
}

Plan search_microbatch(JobSpec& job, const std::function<Plan(const JobSpec&)>& plan_at) {
  const std::vector<int> sizes = microbatch_candidates(job);
  if (sizes.empty())
    throw SpecError("training.microbatch_size", "\"auto\" found no microbatch size for batch_size " +
                                                    std::to_string(job.training.batch_size) + " that the schedule can run");
  std::vector<MicrobatchChoice> rows;
  Plan best;
  int best_b = 0;
  bool best_feasible = false;
  double best_ms = std::numeric_limits<double>::infinity();
  std::exception_ptr first_error;
  double planning_ms = 0;  // every size's: what choosing the size cost
  for (int b : sizes) {
    JobSpec at = job;
    resolve_auto_microbatch(at, b);
    MicrobatchChoice row;
    row.microbatch_size = b;
    row.microbatches = at.pipeline.microbatches;
    Plan plan;
    try {
      plan = plan_at(at);
    } catch (const std::exception& e) {
      row.reason = e.what();
      if (!first_error) first_error = std::current_exception();
      rows.push_back(row);
      continue;
    }
    planning_ms += plan.planning_time_ms;
    row.iteration_time_ms = plan.iteration_time_ms;
    row.feasible = plan.feasible;
    row.reason = plan.reason;
    row.schedule = plan.schedule;
    for (const auto& s : plan.predicted) row.peak_memory_bytes = std::max(row.peak_memory_bytes, s.peak_memory_bytes);
    rows.push_back(row);
    // Feasible beats infeasible; then time; "<=" so a tie takes the larger b.
    const bool better = best_b == 0 || (plan.feasible && !best_feasible) ||
                        (plan.feasible == best_feasible && plan.iteration_time_ms <= best_ms);
    if (better) {
      best = plan;
      best_b = b;
      best_feasible = plan.feasible;
      best_ms = plan.iteration_time_ms;
    }
  }
  // No size could be planned: the reason is the job's, not the size's.
  if (best_b == 0) std::rethrow_exception(first_error);
  resolve_auto_microbatch(job, best_b);
  best.microbatch_size = best_b;
  best.planning_time_ms = planning_ms;
  best.microbatch_search = rows;
  return best;
}

}  // namespace pw
