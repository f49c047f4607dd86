#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/cost/gradient_sync.h"
#include "core/model/layer_profile.h"
#include "core/plan/plan.h"
#include "core/schedule/memory_cap.h"
#include "core/schedule/order_timeline.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/device.h"
#include "core/spec/job_fields.h"  // planner_names(): the names the registry makes

namespace pw {

// Everything a planner may look at.
struct PlanRequest {
  const ModelProfile* profile = nullptr;
  DeviceSpec device;  // every stage's device (memory budget = device.memory_bytes)
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  // pipeline.schedule "auto": run_planner plans every schedule family the
  // shape allows (1f1b, zb-h1, zb-h2, zb-v, dualpipe-v) and keeps the
  // fastest feasible plan; `schedule` and `chunks` are then ignored.
  bool auto_schedule = false;
  // Share of a planner's usual simulation budget (vpipe): "auto" splits
  // two budgets over the families it tries (< 50 ms for 100 layers x 8
  // stages; the bench's jobs lose nothing against full budgets).
  double search_effort = 1.0;
  // pipeline.schedule "generated": how many of the partition search's best
  // plans (by the unit-cost order's simulated time) are judged again, each
  // with the order generated for it (vpipe; core/plan/order_choice.h),
  // times search_effort; 1 = the order is adapted to the search's pick only.
  int order_candidates = 4;
  // "auto" and "generated" generate no order for a plan whose busiest
  // device (plan_work_bound_ms) is slower than a plan already judged: no
  // order on it can win. false: an order for every plan (the tests hold
  // the two to the same choice).
  bool prune_orders = true;
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
  // Replicas of the pipeline and where they sit: plans are judged with
  // their gradient synchronisation (SimInput::sync).
  GradientSync sync;
  // What an iteration costs (order_timeline.h): plans are judged, and
  // generated orders made, by it (SimInput::iteration_cost).
  IterationCost iteration_cost = IterationCost::Window;
  // pipeline.memory_cap: a plan whose order keeps more activations in
  // flight on some device is infeasible; generated orders are made under it.
  MemoryCap memory_cap;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;
  // Returns a plan with partition and policy set. The caller (plan_job)
  // fills predictions by simulating it.
  virtual Plan plan(const PlanRequest& req) const = 0;
};

// Throws std::invalid_argument for an unknown name.
std::unique_ptr<Planner> make_planner(const std::string& name);

// Simulates a plan under its schedule and fills iteration time, throughput,
// per-stage predictions and feasibility (out-of-memory makes it
// infeasible, with the stage and bytes in `reason`). For "generated" the
// plan's order is generated first (attach_generated_order), unless
// `keep_order` and the plan already carries one (a planner chose the plan
// by it: core/plan/order_choice.h); either way the unit-cost order
// replaces it where the simulator finds that faster.
void evaluate_plan(const PlanRequest& req, Plan& plan, bool keep_order = false);

// Runs the named planner, times it and evaluates the result. With
// req.auto_schedule, once per schedule family (auto_schedule_candidates);
// the plan's `schedule` names the winner and best_1f1b_ms the 1F1B plan's
// time. Planning time counts every family.
Plan run_planner(const std::string& name, const PlanRequest& req);

// The families "auto" tries for a request's shape, with their chunk counts:
// V-shaped ones need 2 x stages <= layers, DualPipeV also microbatches >=
// 2 x stages; then v-half, v-min and the generated V, which judges the
// plans of every V family with its own order (generated_plan.h).
std::vector<std::pair<ScheduleKind, int>> auto_schedule_candidates(const PlanRequest& req);

}  // namespace pw
