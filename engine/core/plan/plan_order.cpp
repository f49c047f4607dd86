#include "core/plan/plan_order.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/cost/gradient_sync.h"
#include "core/cost/stage_cost.h"

namespace pw {
namespace {

// Stages a plan gives the order every action; a stage with no forward (an
// impossible profile) still takes a little, as the generator needs.
constexpr double kLeast = 1e-9;

}  // namespace

namespace {

OrderProblem order_problem(const PlanRequest& req, const Plan& plan, std::vector<double>& cap_units) {
  if (!req.profile) throw std::invalid_argument("generated order: no model profile");
  const int p = req.stages, m = req.microbatches, chunks = req.chunks;
  if ((chunks != 1 && chunks != 2) || static_cast<int>(plan.stages.size()) != p * chunks)
    throw std::invalid_argument("generated order: the plan must have one stage per device or two in a V (" +
                                std::to_string(p) + " devices, " + std::to_string(chunks) + " chunks), it has " +
                                std::to_string(plan.stages.size()));
  const ModelProfile& prof = *req.profile;
  const DeviceSpec& dev = req.device;
  const double overhead = dev.action_overhead_us * 1e-3;
  OrderProblem pr;
  pr.devices = p;
  pr.microbatches = m;
  pr.v_shape = chunks == 2;
  const int V = pr.virtual_stages();
  pr.stages.resize(V);
  pr.released.resize(V);
  pr.held.resize(V);
  pr.hops.resize(V - 1);
  pr.memory_limit.resize(p);
  pr.objective = req.iteration_cost;
  cap_units.assign(p, 0);
  std::vector<StageCost> cost(V);
  std::vector<std::uint64_t> held(V);
  for (int j = 0; j < V; ++j) {
    const StageRange& r = plan.stages[j];
    const StageCost& c = cost[j] = stage_cost(prof, r, plan.policy);
    const int d = pr.device_of(j);
    const double slow = req.slowdown.empty() ? 1.0 : req.slowdown.at(d);
    // A V's turn stays on its device: no send, as the simulator charges.
    const bool remote_out = j + 1 < V && pr.device_of(j + 1) != d;
    const bool remote_in = j > 0 && pr.device_of(j - 1) != d;
    const std::uint64_t in_bytes = remote_in ? prof.boundary_bytes(r.first_layer - 1) : 0;
    const double cpu_out = remote_out ? send_cpu_ms(dev, c.output_bytes) : 0;
    const double cpu_in = remote_in ? send_cpu_ms(dev, in_bytes) : 0;
    ActionTimes& t = pr.stages[j];
    t.f = std::max(kLeast, c.fwd_ms * slow + cpu_out + overhead);
    t.b = std::max(kLeast, (c.bwd_input_ms + c.recompute_ms) * slow + cpu_in + overhead);
    t.w = c.bwd_weight_ms * slow + overhead;
    if (remote_out) {
      // Forward and backward cross the cut with the same bytes, over the
      // link the simulator gives this cut (the node link across nodes).
      const LinkSpeed cut = pipeline_link(req.sync, d, pr.device_of(j + 1), {dev.link_gbps, dev.link_latency_us, false});
      const double link = transfer_ms(c.output_bytes, cut.gbps, cut.latency_us);
      pr.hops[j] = std::max(0.0, link - cpu_out - overhead);
    }
    // What a microbatch keeps from F to B (W's stash where it keeps
    // nothing on the device, all swapped).
    held[j] = c.kept_bytes_per_mb > 0 ? c.kept_bytes_per_mb : c.w_stash_bytes_per_mb;
  }
  for (int d = 0; d < p; ++d) {
    // One unit: the most a microbatch of the device's chunks keeps from F
    // to B; each chunk's F adds its own bytes as a share of it, B turns them
    // into the chunk's stash, freeing (held - stash) / unit (negative: B
    // adds). One chunk: exactly its own.
    std::uint64_t unit = 0, fixed = 0;
    for (int k = 0; k < chunks; ++k) unit = std::max(unit, held[pr.vstage(d, k)]);
    // All m microbatches of every chunk held, each at its largest (after B
    // where B adds): more is no limit.
    double most = 0;
    for (int k = 0; k < chunks; ++k) {
      const int j = pr.vstage(d, k);
      const double u = static_cast<double>(unit);
      pr.held[j] = unit == 0 ? 1.0 : static_cast<double>(held[j]) / u;
      pr.released[j] =
          unit == 0 ? 1.0 : (static_cast<double>(held[j]) - static_cast<double>(cost[j].w_stash_bytes_per_mb)) / u;
      most += m * pr.most_held(j);
      StageCost c = cost[j];
      c.kept_bytes_per_mb = held[j];
      // A V's two chunks each counted with their transient backward memory:
      // one more than runs at once, erring on the safe side.
      fixed += peak_memory_bound(c, 0, 1);
    }
    double limit = most;
    if (unit > 0)
      // Not rounded: with B's releases the units a device holds are
      // fractional, and the bytes are what must fit.
      limit = dev.memory_bytes > fixed ? static_cast<double>(dev.memory_bytes - fixed) / static_cast<double>(unit) : 0;
    // At least one microbatch per chunk, the least any order holds (a V's
    // turn keeps one on each chunk): a device too small even for that gets
    // an order anyway, and the simulator says the plan is out of memory.
    // pipeline.memory_cap in the same units: a fraction of 1F1B's
    // min(m, p) microbatches of the device's layers kept whole (recompute
    // and offload bring a device under it, as the planners' range check
    // counts: PipelineModel::activation_cap), against one unit.
    double device_mb = 0;
    for (int k = 0; k < chunks; ++k) {
      const StageRange& r = plan.stages[pr.vstage(d, k)];
      for (int l = r.first_layer; l <= r.last_layer; ++l) device_mb += static_cast<double>(prof.layers[l].activation_bytes);
    }
    limit = std::min(limit, memory_cap_units(req.memory_cap, p, m, chunks, static_cast<double>(unit), device_mb));
    pr.memory_limit[d] = std::clamp(limit, pr.least_held(d), most);
    cap_units[d] = memory_cap_units(req.memory_cap, p, m, chunks, static_cast<double>(unit), device_mb);
  }
  return pr;
}

}  // namespace

OrderProblem plan_order_problem(const PlanRequest& req, const Plan& plan) {
  std::vector<double> cap;
  return order_problem(req, plan, cap);
}

std::string memory_cap_violation(const PlanRequest& req, const Plan& plan, const Schedule& sched) {
  if (!req.memory_cap.set() || !req.profile) return "";
  const int p = req.stages;
  std::vector<double> peak(p, 0), cap(p, 0);
  const bool order_placement = (sched.chunks() == 1 || (sched.chunks() == 2 && sched.virtual_stage(0, 1) == 2 * p - 1));
  if (order_placement && static_cast<int>(plan.stages.size()) == p * sched.chunks()) {
    PlanRequest r = req;
    r.chunks = sched.chunks();
    OrderProblem pr = order_problem(r, plan, cap);
    pr.memory_limit.clear();
    const OrderTiming t = time_orders(pr, order_of(sched));
    peak = t.peak_memory;
  } else {
    // Interleaved: its in-flight count of chunk microbatches, at equal chunks.
    for (int d = 0; d < p; ++d) {
      peak[d] = sched.in_flight(d);
      cap[d] = memory_cap_units(req.memory_cap, p, req.microbatches, sched.chunks());
    }
  }
  for (int d = 0; d < p; ++d)
    if (peak[d] > cap[d] + 1e-9) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "pipeline.memory_cap (%s): device %d keeps %.2f microbatches' activations in flight, the cap "
                    "allows %.2f",
                    to_string(req.memory_cap).c_str(), d, peak[d], cap[d]);
      return buf;
    }
  return "";
}

void attach_generated_order(const PlanRequest& req, Plan& plan, std::int64_t search_budget,
                            const std::vector<NamedOrder>& extra) {
  plan.generated.reset();
  if (req.schedule != ScheduleKind::Generated || (req.chunks != 1 && req.chunks != 2) || plan.stages.empty()) return;
  const OrderProblem pr = plan_order_problem(req, plan);
  const auto unit = order_of(*make_schedule(ScheduleKind::Generated, req.stages, req.microbatches, req.chunks));
  GeneratedOrder g;
  try {
    std::vector<NamedOrder> candidates = extra;
    candidates.emplace_back("unit costs", unit);
    g = generate_order(pr, search_budget, candidates);
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
  for (int j = 0; j < pr.virtual_stages(); ++j) {
    o.f_ms.push_back(pr.stages[j].f);
    o.b_ms.push_back(pr.stages[j].b);
    o.w_ms.push_back(pr.stages[j].w);
    o.released_at_b.push_back(pr.released[j]);
    o.held.push_back(pr.held[j]);
  }
  o.hop_ms = pr.hops;
  o.memory_limit = pr.memory_limit;
  o.source = g.source;
  o.generated_ms = g.timing.cost(pr.objective);
  o.unit_order_ms = time_orders(pr, unit).cost(pr.objective);
  for (const auto& d : g.order) o.order.push_back(order_to_text(d));
  plan.generated = std::move(o);
}

std::unique_ptr<Schedule> make_plan_schedule(ScheduleKind kind, int devices, int microbatches, int chunks,
                                             const Plan& plan) {
  // The stored order's chunks: its per-virtual-stage times.
  if (kind != ScheduleKind::Generated || !plan.generated || (chunks != 1 && chunks != 2) ||
      plan.generated->devices != devices || plan.generated->microbatches != microbatches ||
      static_cast<int>(plan.generated->f_ms.size()) != devices * chunks)
    return make_schedule(kind, devices, microbatches, chunks);
  const PlanOrder& stored = *plan.generated;
  OrderProblem pr = default_order_problem(devices, microbatches, chunks);
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
