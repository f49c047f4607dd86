#include "core/plan/plan_order.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/cost/stage_cost.h"

namespace pw {
namespace {

// Stages a plan gives the order every action; a stage with no forward (an
// impossible profile) still takes a little, as the generator needs.
constexpr double kLeast = 1e-9;

}  // namespace

OrderProblem plan_order_problem(const PlanRequest& req, const Plan& plan) {
  if (!req.profile) throw std::invalid_argument("generated order: no model profile");
  const int p = req.stages, m = req.microbatches;
  if (req.chunks != 1 || static_cast<int>(plan.stages.size()) != p)
    throw std::invalid_argument("generated order: the plan must have one stage per device (" + std::to_string(p) +
                                "), it has " + std::to_string(plan.stages.size()));
  const ModelProfile& prof = *req.profile;
  const DeviceSpec& dev = req.device;
  const double overhead = dev.action_overhead_us * 1e-3;
  OrderProblem pr;
  pr.devices = p;
  pr.microbatches = m;
  pr.stages.resize(p);
  pr.released.resize(p);
  pr.hops.resize(std::max(0, p - 1));
  pr.memory_limit.resize(p);
  for (int j = 0; j < p; ++j) {
    const StageRange& r = plan.stages[j];
    const StageCost c = stage_cost(prof, r, plan.policy);
    const double slow = req.slowdown.empty() ? 1.0 : req.slowdown.at(j);
    const std::uint64_t in_bytes = j > 0 ? prof.boundary_bytes(r.first_layer - 1) : 0;
    const double cpu_out = j + 1 < p ? send_cpu_ms(dev, c.output_bytes) : 0;
    const double cpu_in = j > 0 ? send_cpu_ms(dev, in_bytes) : 0;
    ActionTimes& t = pr.stages[j];
    t.f = std::max(kLeast, c.fwd_ms * slow + cpu_out + overhead);
    t.b = std::max(kLeast, (c.bwd_input_ms + c.recompute_ms) * slow + cpu_in + overhead);
    t.w = c.bwd_weight_ms * slow + overhead;
    if (j + 1 < p) {
      // Forward and backward cross the cut with the same bytes.
      const double link = transfer_ms(c.output_bytes, dev.link_gbps, dev.link_latency_us);
      pr.hops[j] = std::max(0.0, link - cpu_out - overhead);
    }
    // One unit: what a microbatch keeps from F to B (W's stash where it
    // keeps nothing on the device, all swapped); B turns it into the stash,
    // freeing 1 - stash / unit of it (negative: B adds).
    const std::uint64_t held = c.kept_bytes_per_mb > 0 ? c.kept_bytes_per_mb : c.w_stash_bytes_per_mb;
    pr.released[j] = held == 0 ? 1.0 : 1.0 - static_cast<double>(c.w_stash_bytes_per_mb) / static_cast<double>(held);
    StageCost unit = c;
    unit.kept_bytes_per_mb = held;
    const std::uint64_t fixed = peak_memory_bound(unit, 0, 1);
    // All m microbatches held, each at its largest (after B where B adds):
    // more is no limit.
    const double most = m * std::max(1.0, 1.0 - pr.released[j]);
    double limit = most;
    if (held > 0)
      // Not rounded: with B's releases the units a device holds are
      // fractional, and the bytes are what must fit.
      limit = dev.memory_bytes > fixed ? static_cast<double>(dev.memory_bytes - fixed) / static_cast<double>(held) : 0;
    pr.memory_limit[j] = std::clamp(limit, 1.0, most);
  }
  return pr;
}

void attach_generated_order(const PlanRequest& req, Plan& plan, std::int64_t search_budget) {
  plan.generated.reset();
  if (req.schedule != ScheduleKind::Generated || req.chunks != 1 || plan.stages.empty()) return;
  const OrderProblem pr = plan_order_problem(req, plan);
  const auto unit = order_of(*make_schedule(ScheduleKind::Generated, req.stages, req.microbatches, 1));
  GeneratedOrder g;
  try {
    g = generate_order(pr, search_budget, {{"unit costs", unit}});
  } catch (const std::runtime_error&) {
    // Nothing fits the limits (the plan is out of memory whatever the
    // order): the unit-cost order, which the simulator will judge.
    g.order = unit;
    g.timing = time_orders(pr, unit);
    g.source = "unit costs (no order fits the memory limits)";
  }
  PlanOrder o;
  o.devices = pr.devices;
  o.microbatches = pr.microbatches;
  for (int j = 0; j < pr.devices; ++j) {
    o.f_ms.push_back(pr.stages[j].f);
    o.b_ms.push_back(pr.stages[j].b);
    o.w_ms.push_back(pr.stages[j].w);
    o.released_at_b.push_back(pr.released[j]);
  }
  o.hop_ms = pr.hops;
  o.memory_limit = pr.memory_limit;
  o.source = g.source;
  o.generated_ms = g.timing.makespan;
  o.unit_order_ms = time_orders(pr, unit).makespan;
  for (const auto& d : g.order) o.order.push_back(order_to_text(d));
  plan.generated = std::move(o);
}

std::unique_ptr<Schedule> make_plan_schedule(ScheduleKind kind, int devices, int microbatches, int chunks,
                                             const Plan& plan) {
  if (kind != ScheduleKind::Generated || !plan.generated || chunks != 1 || plan.generated->devices != devices ||
      plan.generated->microbatches != microbatches)
    return make_schedule(kind, devices, microbatches, chunks);
  const PlanOrder& stored = *plan.generated;
  OrderProblem pr = default_order_problem(devices, microbatches, 1);
  pr.memory_limit.clear();
  GeneratedOrder g;
  try {
    for (const auto& text : stored.order) g.order.push_back(order_from_text(text));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("plan generated_order: ") + e.what());
  }
  if (std::string why = check_order(pr, g.order); !why.empty())
    throw std::invalid_argument("plan generated_order cannot run: " + why);
  return make_generated_schedule(pr, g);
}

}  // namespace pw
