#include "core/job/job_plan.h"

#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"

namespace pw {

ModelProfile job_profile(const JobSpec& job) {
  if (!job.model.profile.empty()) return load_profile_file(job.model.profile, job.training.microbatch_size);
  return analytic_profile(job);
}

PlanRequest plan_request(const JobSpec& job, const ModelProfile& profile) {
  PlanRequest r;
  r.profile = &profile;
  r.device = job.cluster.device;
  r.schedule = job.pipeline.schedule;
  r.stages = job.pipeline.stages;
  r.microbatches = job.pipeline.microbatches;
  r.chunks = job.pipeline.chunks;
  r.microbatch_size = job.training.microbatch_size;
  return r;
}

SimInput PreparedJob::sim_input() const {
  SimInput in;
  in.profile = &profile;
  in.plan = &plan;
  in.schedule = schedule.get();
  in.device = job.cluster.device;
  in.microbatch_size = job.training.microbatch_size;
  return in;
}

PreparedJob prepare_job(const JobSpec& job, const std::string& planner) {
  PreparedJob p;
  p.job = job;
  p.profile = job_profile(job);
  PlanRequest req = plan_request(p.job, p.profile);
  p.plan = run_planner(planner.empty() ? job.pipeline.planner : planner, req);
  p.schedule = make_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches,
                             job.pipeline.chunks);
  return p;
}

}  // namespace pw
