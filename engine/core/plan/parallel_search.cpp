#include "core/plan/parallel_search.h"

#include "core/plan/search_rows.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>

#include "core/schedule/schedule_kind.h"
#include "core/spec/spec_bounds.h"
#include "core/spec/spec_error.h"
#include "core/spec/tensor_split.h"

namespace pw {

std::vector<std::pair<int, int>> parallel_candidates(const JobSpec& job, int layers) {
  const int devices = job.cluster.devices / std::max(1, job.parallel.tensor);
  const int max_stages = std::max(1, std::min(devices, layers / std::max(1, job.pipeline.chunks)));
  const long long unit = job.training.microbatch_size_auto ? 1 : job.training.microbatch_size;
  auto batch_fits = [&](int d) { return job.training.batch_size % (unit * d) == 0; };
  auto stages_fit = [&](int p) { return !(!job.pipeline.stages_auto && p != job.pipeline.stages) && p <= max_stages; };
  auto data_fits = [&](int d) { return (job.parallel.data_auto || d == job.parallel.data) && batch_fits(d); };
  // What the schedule needs of the microbatch count per replica (a size
  // "auto" is filtered per size by microbatch_candidates instead).
  auto schedule_fits = [&](int p, int d) {
    if (job.training.microbatch_size_auto) return true;
    const long long m = job.training.batch_size / (unit * d);
    if (job.pipeline.schedule == ScheduleKind::DualPipeV && m < 2LL * p) return false;
    if (job.pipeline.schedule == ScheduleKind::Interleaved && m % p != 0) return false;
    return m <= bounds::kMicrobatches;
  };
  std::vector<std::pair<int, int>> out;
  for (int p = 1; p <= devices; ++p)
    if (devices % p == 0 && stages_fit(p) && data_fits(devices / p) && schedule_fits(p, devices / p))
      out.emplace_back(p, devices / p);
  if (!out.empty()) return out;
  // No split uses every device: per stage count, the most replicas that fit.
  for (int p = 1; p <= max_stages; ++p) {
    if (!stages_fit(p)) continue;
    for (int d = devices / p; d >= 1; --d)
      if (data_fits(d) && schedule_fits(p, d)) {
        out.emplace_back(p, d);
        break;
      }
  }
  if (out.empty())
    throw SpecError("parallel.data", "no (stages, replicas) split of cluster.devices (" + std::to_string(devices) +
                                         ") divides training.batch_size (" + std::to_string(job.training.batch_size) +
                                         ") into whole microbatches per replica that the schedule can run");
  return out;
}

std::vector<TensorSize> tensor_sizes(const JobSpec& job) {
  if (!job.parallel.tensor_auto) return {{job.parallel.tensor, {}}};
  std::vector<TensorSize> out{{1, {}}};
  const auto& m = job.model;
  const bool splittable = m.kind == "bert" || m.kind == "gpt" || m.kind == "transformer";
  for (int t = 2; splittable && t <= 8; t *= 2) {
    // A group outside a node is not a size of this cluster at all; a
    // model t cannot split is, and its row says why it was left out.
    if (job.cluster.gpus_per_node % t != 0 || t > job.cluster.devices) continue;
    out.push_back({t, tensor_split_refusal(m, t).value_or("")});
  }
  return out;
}

std::vector<int> tensor_candidates(const JobSpec& job) {
  std::vector<int> out;
  for (const TensorSize& s : tensor_sizes(job))
    if (s.skipped.empty()) out.push_back(s.t);
  return out;
}

std::vector<ParallelSplit> parallel_splits(const JobSpec& job, int layers) {
  std::vector<ParallelSplit> out;
  std::exception_ptr none;
  for (int t : tensor_candidates(job)) {
    JobSpec at = job;
    at.parallel.tensor = t;
    try {
      for (auto [p, d] : parallel_candidates(at, layers)) out.push_back({t, p, d});
    } catch (const SpecError&) {
      if (!none) none = std::current_exception();
    }
  }
  if (out.empty() && none) std::rethrow_exception(none);
  return out;
}

void resolve_parallel(JobSpec& job, int stages, int data, int tensor) {
  const bool tensor_was_auto = job.parallel.tensor_auto;
  if (tensor > 0) job.parallel.tensor = tensor;
  job.parallel.tensor_auto = false;
  job.pipeline.stages = stages;
  job.pipeline.stages_auto = false;
  job.parallel.data = data;
  job.parallel.data_auto = false;
  if (!job.training.microbatch_size_auto) job.pipeline.microbatches = job.replica_batch() / job.training.microbatch_size;
  if (job.raw.is_object()) {
    job.raw["pipeline"]["stages"] = stages;
    job.raw["parallel"]["data"] = data;
    // Written where it was searched or is not the default, so a job
    // without tensor parallelism keeps its document as it was.
    if (tensor_was_auto || job.parallel.tensor != 1) job.raw["parallel"]["tensor"] = job.parallel.tensor;
    auto& pipeline = job.raw["pipeline"];
    if (pipeline.contains("microbatches")) pipeline["microbatches"] = job.pipeline.microbatches;
  }
}

Plan search_parallel(JobSpec& job, int layers, const std::function<Plan(JobSpec&)>& plan_at,
                     const std::function<double(const JobSpec&)>& bound_at) {
  struct Candidate {
    JobSpec job;
    double bound = 0;
  };
  std::vector<Candidate> order;
  for (const ParallelSplit& s : parallel_splits(job, layers)) {
    Candidate c{job, 0};
    resolve_parallel(c.job, s.stages, s.data, s.tensor);
    if (bound_at) {
      try {
        c.bound = bound_at(c.job);
      } catch (const std::exception&) {
        c.bound = 0;  // planned, to report why it cannot be
      }
    }
    order.push_back(std::move(c));
  }
  std::stable_sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    if (a.bound != b.bound) return a.bound < b.bound;
    if (a.job.parallel.data != b.job.parallel.data) return a.job.parallel.data > b.job.parallel.data;
    return a.job.parallel.tensor < b.job.parallel.tensor;
  });
  std::vector<ParallelChoice> rows;
  Plan best;
  JobSpec best_job = job;
  bool have = false;
  std::exception_ptr first_error;
  double planning_ms = 0;
  auto better = [&](const Plan& plan, const JobSpec& at) {
    if (!have) return true;
    if (plan.feasible != best.feasible) return plan.feasible;
    if (plan.iteration_time_ms != best.iteration_time_ms) return plan.iteration_time_ms < best.iteration_time_ms;
    if (at.parallel.data != best_job.parallel.data) return at.parallel.data > best_job.parallel.data;
    return at.parallel.tensor < best_job.parallel.tensor;  // a tie keeps the smaller group
  };
  for (Candidate& c : order) {
    ParallelChoice row;
    row.stages = c.job.pipeline.stages;
    row.replicas = c.job.parallel.data;
    row.tensor = c.job.parallel.tensor;
    if (have && best.feasible && c.bound > best.iteration_time_ms) {
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
    row.microbatch_size = c.job.training.microbatch_size;
    row.microbatches = c.job.pipeline.microbatches;
    row.iteration_time_ms = plan.iteration_time_ms;
    row.throughput_samples_per_s = plan.throughput_samples_per_s;
    row.feasible = plan.feasible;
    row.reason = plan.reason;
    row.schedule = plan.schedule;
    for (const auto& s : plan.predicted) {
      row.peak_memory_bytes = std::max(row.peak_memory_bytes, s.peak_memory_bytes);
      row.sync_exposed_ms = std::max(row.sync_exposed_ms, s.sync_exposed_ms);
    }
    rows.push_back(row);
    if (better(plan, c.job)) {
      best = std::move(plan);
      best_job = c.job;
      have = true;
    }
  }
  if (!have) {
    // No split could be planned: a job's error names its field; a planner's
    // or schedule's refusal is said for the splits.
    try {
      std::rethrow_exception(first_error);
    } catch (const SpecError&) {
      throw;
    } catch (const std::exception& e) {
      throw SpecError("pipeline.stages", std::string("no (stages, replicas) split could be planned: ") + e.what());
    }
  }
  for (const TensorSize& s : tensor_sizes(job))
    if (!s.skipped.empty()) {
      ParallelChoice row;
      row.tensor = s.t;  // no stages or replicas: no split of this size was made
      row.reason = "skipped: " + s.skipped;
      rows.push_back(row);
    }
  std::sort(rows.begin(), rows.end(), [](const ParallelChoice& a, const ParallelChoice& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.stages < b.stages;
  });
  job = best_job;
  best.planning_time_ms = planning_ms;
  best.parallel_search = std::move(rows);
  return best;
}

}  // namespace pw
