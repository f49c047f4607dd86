#pragma once
#include <memory>
#include <string>

#include "core/model/layer_profile.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "core/spec/job_spec.h"

namespace pw {

// The model's per-layer costs for a job: analytic from the model kind, or
// the measured profile file the job names.
ModelProfile job_profile(const JobSpec& job);

// The cluster's topology from the job's fields (cluster/topology.h; the
// node link defaults to the device's own where the job has none).
Topology topology_of(const ClusterSpec& cluster);

// The job's replicas and topology as the cost model takes them.
GradientSync gradient_sync(const JobSpec& job);

// What an iteration of the job costs (order_timeline.h): its span where the
// step reduces the whole gradient (training.clip_grad_norm,
// training.skip_nonfinite), else its longest device window.
IterationCost iteration_cost_of(const JobSpec& job);

// The planner's view of a job (the profile must outlive the request).
PlanRequest plan_request(const JobSpec& job, const ModelProfile& profile);

// A job made ready to execute: its profile, plan and schedule.
struct PreparedJob {
  JobSpec job;
  ModelProfile profile;
  Plan plan;
  std::unique_ptr<Schedule> schedule;
  SimInput sim_input() const;
};

// Under pipeline.schedule "auto", the job as the plan runs it: the
// schedule that won and its chunk count (2 for the V-shaped ones).
void resolve_auto_schedule(JobSpec& job, const Plan& plan);

// Profiles, plans (with `planner`, or the job's pipeline.planner when
// empty) and builds the schedule.
PreparedJob prepare_job(const JobSpec& job, const std::string& planner = "");

}  // namespace pw
