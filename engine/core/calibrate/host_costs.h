#pragma once
#include <map>
#include <optional>
#include <vector>

#include "core/calibrate/send_cost.h"
#include "core/calibrate/stage_compute.h"
#include "core/events/event.h"
#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw {

// One microbatch size's in-situ runs, all on one partition: what the
// compute and the host costs are fitted from.
struct SizeRuns {
  std::vector<std::vector<Event>> events;             // one list per run
  std::vector<std::vector<MeasuredStageCompute>> compute;  // measure_stage_compute of each run
  std::vector<double> iteration_ms;                   // one per run
  Plan plan;                                          // the partition every run used

  void add(std::vector<Event> run_events, double run_iteration_ms);
  double mean_ms() const;
  std::vector<MeasuredStageCompute> mean_compute() const { return mean_stage_compute(compute); }
};

struct HostTimeAtSize {
  int microbatch = 0;
  double us = 0;                  // closed where it closes, else the gaps counted
  std::optional<double> counted;  // fit_action_overhead_us over the size's runs
  bool closed = false;
};

// The job's host costs (cluster.*) from its in-situ runs by size: the sends
// fitted over every run's events (their bytes tell the sizes apart), then
// the host time per action closed on each size's mean iteration with those
// sends and `job`'s model.profile (the calibrated profile; overhead_closure.h),
// the gaps counted where it does not close. Sizes with neither are left out.
struct HostCosts {
  std::optional<SendCost> send;
  std::vector<HostTimeAtSize> per_action;  // by size
};
HostCosts fit_host_costs(const JobSpec& job, const std::map<int, SizeRuns>& runs);

// `job` planning with `costs`: the device's send and host-time fields, and
// the same in its document (what suggestions and workers re-read).
void apply_host_costs(JobSpec& job, const HostCosts& costs);

}  // namespace pw
