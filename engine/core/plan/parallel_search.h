#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// The (stages, replicas) splits pipeline.stages and/or parallel.data "auto"
// try for a job (docs/planners.md, "Stages and replicas"): every split that
// uses every device (stages x replicas = cluster.devices) with a degree the
// job fixes held, stages at most the model's layers / chunks, replicas
// dividing the global batch (into whole microbatches where the microbatch
// size is fixed). When no split uses every device (a prime count with
// layers fewer than it), the largest that fits. Increasing in stages.
// Throws SpecError naming parallel.data when no split fits the batch.
std::vector<std::pair<int, int>> parallel_candidates(const JobSpec& job, int layers);

// The job at `stages` x `data`: both degrees fixed, the microbatch count per
// replica (under a fixed microbatch size) and the job document (what the
// workers and the run database read) all say so.
void resolve_parallel(JobSpec& job, int stages, int data);

// Plans the job at every candidate split with `plan_at` (which plans a job
// resolved to one split, resolving its microbatch size too where that is
// "auto", and returns the evaluated plan) and returns the plan of the
// smallest iteration time (the global batch is the same at every split),
// feasible first; a tie keeps more replicas (shorter pipelines, less
// bubble to lose to a slower device). Every split's row is in
// `parallel_search`. With `bound_at` (a lower bound on any plan's
// iteration at a resolved split), splits are planned from the smallest
// bound up and a split whose bound exceeds the best feasible plan found is
// not planned (its row says so). `job` comes back resolved to the choice.
// `layers`: the model's, which bounds the stage count.
Plan search_parallel(JobSpec& job, int layers, const std::function<Plan(JobSpec&)>& plan_at,
                     const std::function<double(const JobSpec&)>& bound_at = {});

}  // namespace pw
