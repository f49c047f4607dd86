// Replicas of the pipeline (parallel.data) in the coordinator: what a run
// with them cannot do yet is refused before any worker starts, naming the
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
                    "stages replicated unequally (PipeDream's per-stage replication) cannot run: the engine runs "
                    "parallel.data replicas of the whole pipeline (plan with another planner, or set every "
                    "stage's replicas to parallel.data)");
  if (plan.data_parallel != job.parallel.data)
    throw SpecError("parallel.data", "the plan was made for " + std::to_string(plan.data_parallel) +
                                         " replicas, the job asks for " + std::to_string(job.parallel.data));
  if (job.parallel.data <= 1) return;
  if (!prepared.schedule->flushes())
    throw SpecError("parallel.data", "replicas need a schedule with a flush (gpipe, 1f1b, interleaved, the "
                                     "zero-bubble ones): pipeline.schedule \"" + to_string(job.pipeline.schedule) +
                                     "\" updates after every microbatch, and replicas stepping apart would not "
                                     "stay one model");
  // The migration agent (engine/runtime/migration) moves one pipeline's
  // layers and measures its stages by stage number; every replica moving
  // the same layers at the same iteration is not built, so it is refused.
  if (job.runtime.present)
    throw SpecError("parallel.data", "live migration (the job's \"runtime\" section: replan, migrate, slowdown) "
                                     "runs one pipeline and is not supported with replicas: set parallel.data to 1 "
                                     "or leave \"runtime\" out");
}

std::string Coordinator::worker_name(int rank) const { return role_of_rank(rank, replicas_).name(); }

}  // namespace pw::rt::coordinator_impl
