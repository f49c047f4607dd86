#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/device.h"

namespace pw {

// Everything a planner may look at.
struct PlanRequest {
  const ModelProfile* profile = nullptr;
  DeviceSpec device;  // every stage's device (memory budget = device.memory_bytes)
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int stages = 1;
  int microbatches = 1;
  int chunks = 1;
  int microbatch_size = 1;
  // Incremental replanning (live migration): the plan in force. Planners
  // that support it prefer plans that move few layers.
  const Plan* current = nullptr;
  // Per device compute slowdown as measured online (see SimInput::slowdown);
  // planners place fewer layers on slow devices. Empty = homogeneous.
  std::vector<double> slowdown;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;
  // Returns a plan with partition and policy set. The caller (plan_job)
  // fills predictions by simulating it.
  virtual Plan plan(const PlanRequest& req) const = 0;
};

// Known planner names, in the order the CLI lists them.
std::vector<std::string> planner_names();
// Throws std::invalid_argument for an unknown name.
std::unique_ptr<Planner> make_planner(const std::string& name);

// Simulates a plan under its schedule and fills iteration time, throughput,
// per-stage predictions and feasibility (out-of-memory makes it
// infeasible, with the stage and bytes in `reason`).
void evaluate_plan(const PlanRequest& req, Plan& plan);

// Runs the named planner, times it and evaluates the result.
Plan run_planner(const std::string& name, const PlanRequest& req);

}  // namespace pw
