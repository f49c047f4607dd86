// Simulator speed: events per second on one core for a 1F1B iteration with
// 1024 stages x 8192 microbatches (~17M compute events), against a baseline
// loop in the same process that only walks the same schedule.
#include <chrono>
#include <cstdio>

#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "bench_quick.h"
#include "core/sim/simulator.h"

using namespace pw;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  int stages = bench::quick_or(64, 1024), microbatches = bench::quick_or(256, 8192);
  if (argc == 3) {
    stages = std::atoi(argv[1]);
    microbatches = std::atoi(argv[2]);
  }
  ModelProfile profile;
  for (int l = 0; l < stages; ++l) {
    LayerProfile L;
    L.fwd_ms = 1.0;
    L.bwd_ms = 2.0;
    L.activation_bytes = 1 << 20;
    L.output_bytes = 1 << 16;
    L.param_bytes = 1 << 20;
    profile.layers.push_back(L);
  }
  Plan plan = uniform_partition(stages, stages);
  auto sched = make_schedule(ScheduleKind::OneFOneB, stages, microbatches);
  DeviceSpec dev = *device_preset("a100-80g");

  // Baseline: only enumerate the schedule's actions.
  auto t0 = std::chrono::steady_clock::now();
  long long walked = 0;
  for (int d = 0; d < stages; ++d)
    for (long long i = 0; i < sched->length(d); ++i) walked += sched->action(d, i).microbatch;
  double walk_s = seconds_since(t0);

  SimInput in{&profile, &plan, sched.get(), dev, 1};
  t0 = std::chrono::steady_clock::now();
  SimResult r = simulate(in);
  double sim_s = seconds_since(t0);

  std::printf("simulator: 1F1B, %d stages x %d microbatches\n", stages, microbatches);
  std::printf("  events                %llu (compute + transfers)\n", static_cast<unsigned long long>(r.events));
  std::printf("  simulate              %.3f s   (target < 2 s)\n", sim_s);
  std::printf("  events/s              %.1f M   (target >= 20 M)\n", r.events / sim_s / 1e6);
  std::printf("  schedule walk only    %.3f s   (ratio simulate/walk %.2fx; checksum %lld)\n", walk_s, sim_s / walk_s,
              walked % 1000);
  std::printf("  iteration time        %.1f ms, bubble %.4f\n", r.iteration_time_ms, r.bubble_fraction);
  return 0;
}
