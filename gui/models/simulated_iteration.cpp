#include "gui/models/simulated_iteration.h"

#include <algorithm>

#include "core/cost/stage_cost.h"

namespace pw::gui {
namespace {

struct Collector final : EventSink {
  std::vector<Event>* events;
  std::vector<MemorySample>* memory;
  void on_event(const Event& e) override { events->push_back(e); }
  void on_memory(std::int32_t stage, std::int64_t t, std::int64_t bytes) override {
    MemorySample m;
    m.stage = stage;
    m.t_ns = t;
    m.bytes = bytes;
    memory->push_back(m);
  }
};

}  // namespace

SimulatedIteration simulate_iteration(const PreparedJob& p) {
  SimulatedIteration it;
  Collector c;
  c.events = &it.events;
  c.memory = &it.memory;
  it.result = simulate(p.sim_input(), &c);
  const JobSpec& job = p.job;
  int devices = p.schedule->devices();
  it.info.name = job.name;
  it.info.source = "simulated (" + p.plan.planner + ")";
  it.info.stages = devices;
  it.info.microbatch_size = job.training.microbatch_size;
  it.info.microbatches = job.pipeline.microbatches;
  it.info.memory_budget.assign(devices, static_cast<std::int64_t>(job.cluster.device.memory_bytes));
  it.info.replicas = std::max(1, p.plan.data_parallel);  // the simulator runs replica 0; the others alike
  it.plan.version = 1;
  it.plan.plan = p.plan;

  // Split the simulator's resident total into the categories the cost
  // model knows statically; the remainder is activations in flight.
  std::vector<std::array<std::int64_t, 3>> fixed(devices);  // parameters+gradients, optimizer, stashed
  for (int d = 0; d < devices; ++d) {
    for (int ch = 0; ch < p.schedule->chunks(); ++ch) {
      StageCost sc = stage_cost(p.profile, p.plan.stages[p.schedule->virtual_stage(d, ch)], p.plan.policy);
      fixed[d][0] += static_cast<std::int64_t>(2 * sc.param_bytes);
      fixed[d][1] += static_cast<std::int64_t>(sc.static_bytes - 2 * sc.param_bytes);
      fixed[d][2] += static_cast<std::int64_t>(std::max(0, p.schedule->weight_versions(d) - 1)) *
                     static_cast<std::int64_t>(sc.param_bytes);
    }
  }
  for (auto& m : it.memory) {
    const auto& f = fixed[m.stage];
    std::int64_t rest = m.bytes;
    std::int64_t part[3];
    for (int k = 0; k < 3; ++k) {
      part[k] = std::min(f[k], std::max<std::int64_t>(0, rest));
      rest -= part[k];
    }
    m.parameters = part[0];
    m.optimizer = part[1];
    m.stashed = part[2];
    m.activations = std::max<std::int64_t>(0, rest);
    m.budget = static_cast<std::int64_t>(job.cluster.device.memory_bytes);
  }
  std::stable_sort(it.events.begin(), it.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(it.memory.begin(), it.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.t_ns < b.t_ns; });
  for (const auto& e : it.events) it.period = std::max(it.period, e.end_ns);
  return it;
}

RunBatch repeat_iteration(const SimulatedIteration& it, int iterations) {
  RunBatch b;
  b.info = it.info;
  b.plans.push_back(it.plan);
  b.events.reserve(it.events.size() * static_cast<std::size_t>(std::max(iterations, 0)));
  b.memory.reserve(it.memory.size() * static_cast<std::size_t>(std::max(iterations, 0)));
  for (int k = 0; k < iterations; ++k) {
    std::int64_t off = k * it.period;
    for (Event e : it.events) {
      e.start_ns += off;
      e.end_ns += off;
      b.events.push_back(e);
    }
    for (MemorySample m : it.memory) {
      m.t_ns += off;
      b.memory.push_back(m);
    }
  }
  b.finished = true;
  return b;
}

}  // namespace pw::gui
