#pragma once
#include <functional>
#include <vector>

#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// The microbatch sizes training.microbatch_size "auto" tries for a job:
// the divisors of the batch when there are at most 8, else the powers of
// two that divide it and the batch itself; less those the job's schedule
// cannot run (dualpipe-v: microbatches >= 2 x stages; interleaved: a
// multiple of stages) or past the microbatch-count bound. Increasing.
std::vector<int> microbatch_candidates(const JobSpec& job);

// The job at microbatch size `b`: training.microbatch_size, the microbatch
// count and the job document (what workers and the run database read) all
// say b, and the job is no longer "auto"; a host overhead given by size
// (cluster.action_overhead_us as a table) is the one at b.
void resolve_auto_microbatch(JobSpec& job, int b);

// Plans the job at every candidate size with `plan_at` (which plans a job
// already resolved to one size and returns the evaluated plan) and returns
// the fastest feasible plan (the smallest iteration time: the batch is the
// same at every size; a tie keeps the larger microbatch), with every size's
// row in `microbatch_search`. Sizes that cannot be planned (a spec error, a
// planner refusal) are rows with the reason. When none is feasible, the
// fastest infeasible plan comes back (feasible false, its reason). `job`
// comes back resolved to the size chosen.
//
// With `bound_at` (a lower bound on any plan's iteration time at a resolved
// size, iteration_lower_bound_ms), sizes are planned from the smallest
// bound up, and a size whose bound exceeds the best feasible plan found is
// not planned at all: its row says so (pruned, with the bound). The choice
// is the exhaustive search's; the small sizes, whose many microbatches
// make them the slowest to plan and simulate, are the ones skipped.
Plan search_microbatch(JobSpec& job, const std::function<Plan(const JobSpec&)>& plan_at,
                       const std::function<double(const JobSpec&)>& bound_at = {});

}  // namespace pw
