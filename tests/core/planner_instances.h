#pragma once
// Random small planning instances where memory binds: shared by the
// planner tests and the planner benchmark (bench/planner_bench.cpp).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>

#include "core/plan/planner.h"
#include "core/schedule/schedule.h"

namespace pw::plantest {

struct Instance {
  std::unique_ptr<ModelProfile> profile;
  PlanRequest req;
};

// `layers` layers with unequal costs (a NAS-like mix), `stages` stages, a
// budget between what recomputing everything and keeping everything need
// on an even split, a host link that hides some swaps and a device link
// whose transfers cost 5-30% of compute. V-shaped schedules get two
// chunks per device (2 x stages <= layers is the caller's to ensure); each
// chunk's share of the budget is sized like a stage's.
inline Instance random_instance(std::mt19937_64& rng, int layers, int stages, int microbatches,
                                ScheduleKind schedule = ScheduleKind::OneFOneB) {
  auto U = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  constexpr double MB = 1024.0 * 1024;
  Instance x;
  x.profile = std::make_unique<ModelProfile>();
  double act_sum = 0, fwd_sum = 0, static_sum = 0, in_sum = 0;
  for (int l = 0; l < layers; ++l) {
    LayerProfile L;
    L.name = "l" + std::to_string(l);
    L.fwd_ms = U(0.5, 3.0);
    L.bwd_ms = L.fwd_ms * U(1.5, 2.5);
    L.activation_bytes = static_cast<std::uint64_t>(U(50, 600) * MB);
    L.input_bytes = static_cast<std::uint64_t>(L.activation_bytes * U(0.05, 0.3));
    L.output_bytes = static_cast<std::uint64_t>(U(5, 60) * MB);
    L.param_bytes = static_cast<std::uint64_t>(U(10, 200) * MB);
    L.optimizer_bytes = 2 * L.param_bytes;
    L.optimizer_ms = U(0.0, 0.3);
    act_sum += L.activation_bytes;
    fwd_sum += L.fwd_ms;
    in_sum += L.input_bytes;
    static_sum += 4.0 * L.param_bytes;
    x.profile->layers.push_back(L);
  }
  const int chunks = is_v_shape(schedule) ? 2 : 1;
  auto sched = make_schedule(schedule, stages, microbatches, chunks);
  int n0 = sched->in_flight_of_chunk(0, 0);
  // Stage 0 of an even split: keeping everything needs `hi`, recomputing
  // everything about `lo`; the budget lies in between.
  double share = 1.0 / (stages * chunks);
  double lo = static_sum * share * (schedule == ScheduleKind::PipeDream ? 1.0 + 0.25 * n0 : 1.0) +
              n0 * in_sum * share + act_sum / layers;
  double hi = lo + n0 * (act_sum - in_sum) * share;
  x.req.device.memory_bytes = static_cast<std::uint64_t>(chunks * U(lo + 0.2 * (hi - lo), hi));
  // Bytes per ms over the host link ~ 0.2-1.5x an average layer's
  // activation per ms of forward.
  double host_bytes_per_ms = act_sum / fwd_sum * U(0.2, 1.5);
  x.req.device.host_link_gbps = host_bytes_per_ms * 8.0 / 1e6;
  double out_avg = 32.5 * MB, ms_per_transfer = fwd_sum / layers * 3 * U(0.05, 0.3);
  x.req.device.link_gbps = out_avg / ms_per_transfer * 8.0 / 1e6;
  x.req.device.link_latency_us = U(0, 20);
  x.req.device.tflops = 1;
  x.req.profile = x.profile.get();
  x.req.schedule = schedule;
  x.req.stages = stages;
  x.req.chunks = chunks;
  x.req.microbatches = microbatches;
  x.req.microbatch_size = 1;
  return x;
}

// The shapes the optimality-gap checks draw (bench and tests): 5-10
// layers, 2-4 devices (at most layers / 2 for a V), p to 3p - 1
// microbatches (DualPipeV: at least 2p), small enough for exact.
inline Instance random_gap_instance(std::mt19937_64& rng, ScheduleKind kind) {
  int L = 5 + static_cast<int>(rng() % 6), p = 2 + static_cast<int>(rng() % 3), m = p + static_cast<int>(rng() % (2 * p));
  if (is_v_shape(kind)) p = std::min(p, L / 2);  // two chunks of >= 1 layer per device
  if (kind == ScheduleKind::DualPipeV) m = std::max(m, 2 * p);
  return random_instance(rng, L, p, m, kind);
}

}  // namespace pw::plantest
