#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/planner.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/schedule.h"

namespace pw {

// pipeline.schedule "generated" from the plan (issue 28): the generator's
// problem for one plan (one chunk per device, or two in a V: req.chunks 2,
// device d holding virtual stages d and 2p-1-d) at its microbatch size,
// per virtual stage from the same costs the simulator charges (stage_cost,
// the device's slowdown, per-action overhead and send CPU time; none at a
// V's turn, which stays on its device):
//  - F: the stage's forward (+ its send's CPU time and the action overhead);
//  - B: its input gradient plus the recompute that precedes it (+ the same);
//  - W: its weight gradients (+ the overhead);
//  - the hop between two stages: the cut's transfer (latency + bytes over
//    the link) less the sender's CPU time already in F or B;
//  - memory, per device, counted in the microbatches it holds: one unit is
//    what a microbatch keeps from F to B (the policy's kept bytes: keep, a
//    recomputed layer's input; W's stash where all is swapped); B turns it
//    into W's stash (w_stash_bytes), freeing 1 - stash / unit of it (< 0: B
//    adds, as for recomputed layers), W the rest, as the simulator does.
//    The limit is what the device budget leaves after the stage's static
//    memory, transfer buffers and transient backward memory
//    (peak_memory_bound at no microbatch in flight), over one unit, in
//    [1, microbatches x the most a microbatch holds]. In a V a unit is the
//    larger of the two chunks' (the generator counts units, not bytes, so
//    the smaller chunk's microbatch counts as a whole one until its B), and
//    both chunks' fixed memory is subtracted.
//  - the objective: req.iteration_cost (the window or the span);
//  - pipeline.memory_cap (req.memory_cap): the limit is at most the cap in
//    the same units (memory_cap_units with the device's bytes per
//    microbatch over its chunks).
OrderProblem plan_order_problem(const PlanRequest& req, const Plan& plan);

// "" when `sched` keeps within req.memory_cap on every device with `plan`
// (counted as plan_order_problem counts: a microbatch's units from F to B,
// W's stash from B to W; interleaved: its in-flight chunk microbatches),
// else which device holds how much against the cap, naming the field.
std::string memory_cap_violation(const PlanRequest& req, const Plan& plan, const Schedule& sched);

// The local search's budget for a plan's order (actions timed): enough
// for the gains of unequal stages at 8 x 32, a few ms per plan
// (docs/planners.md).
constexpr std::int64_t kPlanOrderSearch = 500'000;

// Generates the order for `plan` (plan_order_problem), judging the
// unit-cost order the job would run otherwise beside the generator's
// candidates, and stores it with its inputs in plan.generated. Only for
// req.schedule == Generated with one chunk or a V's two; otherwise clears
// it.
// `extra`: further candidates (a hand-built order the plan was made for).
void attach_generated_order(const PlanRequest& req, Plan& plan, std::int64_t search_budget = kPlanOrderSearch,
                            const std::vector<NamedOrder>& extra = {});

// The schedule a job runs with `plan`: for Generated, the order stored in
// plan.generated when it was made for this shape (devices, microbatches,
// chunks: its virtual stages), else the order generated for unit costs; every other kind
// as make_schedule. The engine's workers and the simulator both build it
// this way. Throws std::invalid_argument for a stored order that cannot
// run (check_order), naming the plan's generated_order.
std::unique_ptr<Schedule> make_plan_schedule(ScheduleKind kind, int devices, int microbatches, int chunks,
                                             const Plan& plan);

}  // namespace pw
