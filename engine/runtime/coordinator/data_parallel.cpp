// Replicas of the pipeline (parallel.data) in the coordinator: what a run
// with them cannot do is refused before any worker starts, naming the
// field; each worker is named by stage and replica (WORLD rank = stage x
// replicas + replica, runtime/replica_layout.h).
#include "runtime/coordinator/coordinator_impl.h"

#include "core/spec/spec_error.h"

namespace pw::rt::coordinator_impl {

void Coordinator::check_replicas_supported(const PreparedJob& prepared) const {
  const JobSpec& job = prepared.job;
  const Plan& plan = prepared.plan;
  // PipeDream's planner may replicate single stages (microbatch i of stage s
  // on its replica i mod r_s); the workers run equal replicas of the whole
  // pipeline only.
  if (!plan.replicas.empty())
    throw SpecError("plan.stages[].replicas",
                    "stages replicated unequally (PipeDream's per-stage replication, which the pipedream planner "
                    "chooses when cluster.devices leaves devices spare beyond pipeline.stages x parallel.data) "
                    "cannot run: the engine runs parallel.data replicas of the whole pipeline; set "
                    "cluster.devices to pipeline.stages x parallel.data, or plan with another planner");
  if (plan.data_parallel != job.parallel.data)
    throw SpecError("parallel.data", "the plan was made for " + std::to_string(plan.data_parallel) +
                                         " replicas, the job asks for " + std::to_string(job.parallel.data));
  // Everything else runs with replicas: flush schedules all-reduce each
  // iteration's gradients before the step; PipeDream's async schedule
  // all-reduces each microbatch's before its update, as PipeDream's runtime
  // does for a replicated stage (stage/gradient_sync.h); live migration
  // moves the same layers in every replica at the same iteration
  // (runtime/migration/worker_agent.h).
}

std::string Coordinator::worker_name(int rank) const { return role_of_rank(rank, replicas_, tensors_).name(); }

}  // namespace pw::rt::coordinator_impl
