#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// The (stages, replicas) splits pipeline.stages and/or parallel.data "auto"
// (and, under parallel.tensor "auto", each tensor size's: parallel_splits)
// try for a job (docs/planners.md, "Stages and replicas"): every split that
// uses every device (stages x replicas = cluster.devices) with a degree the
// job fixes held, stages at most the model's layers / chunks, replicas
// dividing the global batch (into whole microbatches where the microbatch
// size is fixed). When no split uses every device (a prime count with
// layers fewer than it), the largest that fits. Increasing in stages.
// Throws SpecError naming parallel.data when no split fits the batch.
// The devices a pipeline's stages and replicas share are cluster.devices /
// parallel.tensor (each stage is a tensor group).
std::vector<std::pair<int, int>> parallel_candidates(const JobSpec& job, int layers);

// One (tensor, stages, replicas) split of cluster.devices.
struct ParallelSplit {
  int tensor = 1, stages = 1, data = 1;
};

// The tensor sizes parallel.tensor "auto" considers (docs/planners.md,
// "Tensor parallelism"): 1 and the powers of two up to 8 (Megatron's and
// every published run's largest; beyond a node's NVLink domain its
// all-reduces would cross nodes) that divide cluster.gpus_per_node, so a
// group is inside a node. A size the model cannot be split by (the job
// check's and the engine's one rule, tensor_split_refusal: heads, FFN
// width, vocabulary) is `skipped` with the reason; the search plans the
// others and adds a row per skipped size. The job's own where it fixes it.
struct TensorSize {
  int t = 1;
  std::string skipped;  // empty: tried
};
std::vector<TensorSize> tensor_sizes(const JobSpec& job);

// The sizes of tensor_sizes that are tried.
std::vector<int> tensor_candidates(const JobSpec& job);

// Every split tried: for each tensor size, parallel_candidates of the
// devices left to stages and replicas (cluster.devices / tensor), by tensor
// then stages. Throws SpecError as parallel_candidates when none fits.
std::vector<ParallelSplit> parallel_splits(const JobSpec& job, int layers);

// The job at `stages` x `data` (x `tensor`, the job's own when 0): every
// degree fixed, the microbatch count per replica (under a fixed microbatch
// size) and the job document (what the workers and the run database read)
// all say so.
void resolve_parallel(JobSpec& job, int stages, int data, int tensor = 0);

// Plans the job at every candidate split with `plan_at` (which plans a job
// resolved to one split, resolving its microbatch size too where that is
// "auto", and returns the evaluated plan) and returns the plan of the
// smallest iteration time (the global batch is the same at every split),
// feasible first; a tie keeps more replicas (shorter pipelines, less
// bubble to lose to a slower device). Every split's row is in
// `parallel_search`. With `bound_at` (a lower bound on any plan's
// iteration at a resolved split), splits are planned from the smallest
// bound up and a split whose bound exceeds the best feasible plan found is
// not planned (its row says so); a tensor size tensor_sizes skipped has a
// row of its own (stages and replicas 0, reason "skipped: ..."). `job`
// comes back resolved to the choice.
// `layers`: the model's, which bounds the stage count.
Plan search_parallel(JobSpec& job, int layers, const std::function<Plan(JobSpec&)>& plan_at,
                     const std::function<double(const JobSpec&)>& bound_at = {});

}  // namespace pw
