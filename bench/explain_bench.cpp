// Idle-time attribution speed (docs/explain.md): runs of 100k, 1M and 3M
// events (a simulated 8-stage 1F1B iteration with transfers, optimizer steps
// and recompute, repeated back to back), against a baseline in the same
// process that only sorts the same events by stage and time, the floor any
// attribution pays. Target: < 1 s at 1M events, linear in events. Times
// are the thread's CPU time (wall time on a shared machine counts other
// processes' turns); wall time is printed beside it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <tuple>
#include <vector>

#include "bench_quick.h"
#include "core/analysis/critical_path.h"
#include "core/analysis/idle_attribution.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"

using namespace pw;

namespace {
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

std::vector<Event> one_iteration(std::int64_t& length) {
  const int p = 8, m = 32;
  ModelProfile profile;
  for (int l = 0; l < 2 * p; ++l) {
    LayerProfile L;
    L.fwd_ms = 1.0 + 0.1 * (l % 3);  // a little imbalance
    L.bwd_ms = 2.0;
    L.optimizer_ms = 0.2;
    L.activation_bytes = 1 << 20;
    L.output_bytes = 1 << 18;
    L.param_bytes = 1 << 20;
    profile.layers.push_back(L);
  }
  Plan plan = uniform_partition(2 * p, p);
  plan.policy[3] = MemoryPolicy::Recompute;
  auto sched = make_schedule(ScheduleKind::OneFOneB, p, m);
  DeviceSpec dev = *device_preset("a100-80g");
  dev.action_overhead_us = 20;
  SimInput in{&profile, &plan, sched.get(), dev, 1, {}};
  Collect c;
  SimResult r = simulate(in, &c);
  length = static_cast<std::int64_t>(r.iteration_time_ms * 1e6) + 1000;
  return c.events;
}

std::vector<Event> run_of(const std::vector<Event>& iteration, std::int64_t length, std::size_t target) {
  std::vector<Event> run;
  run.reserve(target + iteration.size());
  for (std::int64_t k = 0; run.size() < target; ++k)
    for (Event e : iteration) {
      e.start_ns += k * length;
      e.end_ns += k * length;
      run.push_back(e);
    }
  return run;
}
}  // namespace

int main() {
  std::int64_t length = 0;
  auto iteration = one_iteration(length);
  std::printf("explain: idle-time attribution (8 stages, 1F1B, %zu events per iteration)\n", iteration.size());
  std::printf("  %10s %12s %10s %12s %10s %8s %8s\n", "events", "attribute s", "(wall s)", "ns/event", "sort s", "ratio", "path s");
  double first_per_event = 0;
  const std::vector<std::size_t> sizes = bench::quick_or<std::vector<std::size_t>>({10'000, 30'000, 100'000},
                                                                                  {100'000, 1'000'000, 3'000'000});
  for (std::size_t n : sizes) {
    auto run = run_of(iteration, length, n);
    auto copy = run;
    double t0 = cpu_now();
    std::sort(copy.begin(), copy.end(), [](const Event& a, const Event& b) {
      return std::tie(a.stage, a.start_ns) < std::tie(b.stage, b.start_ns);
    });
    double sort_s = cpu_now() - t0;
    copy = run;  // the same input as the sort had, unsorted
    t0 = cpu_now();
    double w0 = wall_now();
    Attribution a = attribute_idle(std::move(copy));
    double attr_s = cpu_now() - t0, attr_wall = wall_now() - w0;
    t0 = cpu_now();
    CriticalPath cp = critical_path(run, a, a.iterations - 1);
    double path_s = cpu_now() - t0;
    double per_event = attr_s / static_cast<double>(run.size()) * 1e9;
    if (first_per_event == 0) first_per_event = per_event;
    std::printf("  %10zu %12.3f %10.3f %12.1f %10.3f %7.2fx %8.3f   (%d iterations, %zu intervals, path %lld steps)\n",
                run.size(), attr_s, attr_wall, per_event, sort_s, attr_s / sort_s, path_s, a.iterations, a.intervals.size(),
                static_cast<long long>(cp.steps.size()));
  }
  std::printf("  target: < 1 s at 1M events; linear: ns/event flat across sizes (first %.1f ns/event)\n", first_per_event);
  return 0;
}
