// In-situ calibration: a run's events become per-stage compute (nested
// work taken out, the first iteration left out, means), and a profile's
// layers are scaled by it. Expected figures are worked out by hand here.
#include <map>
#include <gtest/gtest.h>

#include "core/calibrate/send_cost.h"
#include "core/calibrate/stage_compute.h"

namespace pw {
namespace {

constexpr std::int64_t kMs = 1000000;

Event ev(EventKind k, int stage, int mb, double start_ms, double end_ms, int first = -1, int last = -1) {
  Event e;
  e.kind = k;
  e.stage = stage;
  e.microbatch = mb;
  e.start_ns = static_cast<std::int64_t>(start_ms * kMs);
  e.end_ns = static_cast<std::int64_t>(end_ms * kMs);
  e.first_layer = first;
  e.last_layer = last;
  if (k == EventKind::OptimizerStep) e.chunk = -1;
  return e;
}

// Stage 0 holds layers 0-1 on device 0, stage 1 layer 2 on device 1.
std::vector<Event> two_iterations() {
  using K = EventKind;
  std::vector<Event> e;
  // Iteration 0: everything 100x slower (cold); it must not count.
  e.push_back(ev(K::Forward, 0, 0, 0, 100, 0, 1));
  e.push_back(ev(K::Backward, 0, 0, 100, 300, 0, 1));
  e.push_back(ev(K::OptimizerStep, 0, -1, 300, 350));
  e.push_back(ev(K::Forward, 1, 0, 0, 100, 2, 2));
  e.push_back(ev(K::Backward, 1, 0, 100, 200, 2, 2));
  e.push_back(ev(K::OptimizerStep, 1, -1, 300, 340));
  // Iteration 1, device 0: forwards of 2 and 5 ms, the second with a 1 ms
  // swap-out inside (so 4 of its own); backwards of 6 ms with a 2 ms
  // recompute inside and of 7 ms with a 1 ms swap-in inside.
  e.push_back(ev(K::Forward, 0, 0, 400, 402, 0, 1));
  e.push_back(ev(K::Forward, 0, 1, 402, 407, 0, 1));
  e.push_back(ev(K::SwapOut, 0, 1, 405, 406, 0, 1));
  e.push_back(ev(K::Send, 0, 1, 407, 408, 0, 1));  // not compute, not nested
  e.push_back(ev(K::Backward, 0, 0, 410, 416, 0, 1));
  e.push_back(ev(K::Recompute, 0, 0, 410, 412, 0, 1));
  e.push_back(ev(K::Backward, 0, 1, 416, 423, 0, 1));
  e.push_back(ev(K::SwapIn, 0, 1, 416, 417, 0, 1));
  e.push_back(ev(K::OptimizerStep, 0, -1, 423, 424.5));
  // Iteration 1, device 1: forwards of 3 ms, backwards of 1 and 3 ms; a
  // recompute of another microbatch overlapping in time is not nested.
  e.push_back(ev(K::Forward, 1, 0, 402, 405, 2, 2));
  e.push_back(ev(K::Forward, 1, 1, 407, 410, 2, 2));
  e.push_back(ev(K::Backward, 1, 0, 405, 406, 2, 2));
  e.push_back(ev(K::Backward, 1, 1, 410, 413, 2, 2));
  e.push_back(ev(K::Recompute, 1, 0, 411, 412, 2, 2));
  e.push_back(ev(K::OptimizerStep, 1, -1, 424, 424.5));
  return e;
}

TEST(Calibration, MeasuresEachStagesOwnComputeAfterItsFirstIteration) {
  auto m = measure_stage_compute(two_iterations());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].range.first_layer, 0);
  EXPECT_EQ(m[0].range.last_layer, 1);
  EXPECT_EQ(m[0].device, 0);
  EXPECT_EQ(m[0].microbatches, 2);
  EXPECT_NEAR(m[0].fwd_ms, (2 + 4) / 2.0, 1e-9);        // 2 and 5 - 1
  EXPECT_NEAR(m[0].bwd_ms, ((6 - 2) + (7 - 1)) / 2.0, 1e-9);
  EXPECT_NEAR(m[0].optimizer_ms, 1.5, 1e-9);
  EXPECT_EQ(m[1].range.first_layer, 2);
  EXPECT_NEAR(m[1].fwd_ms, 3, 1e-9);
  EXPECT_NEAR(m[1].bwd_ms, 2, 1e-9);                    // 1 and 3: the other mb's recompute is not inside
  EXPECT_NEAR(m[1].optimizer_ms, 0.5, 1e-9);
}

// One iteration is all there is, so it counts; a stall counts in full
// (a mean: forwards of 1, 2 and 9 ms are 4 ms each, not the median 2).
TEST(Calibration, ARunOfOneIterationIsMeasuredWhole) {
  std::vector<Event> e{ev(EventKind::Forward, 0, 0, 0, 1, 0, 0), ev(EventKind::Forward, 0, 1, 1, 3, 0, 0),
                       ev(EventKind::Forward, 0, 2, 3, 12, 0, 0), ev(EventKind::Backward, 0, 0, 12, 18, 0, 0),
                       ev(EventKind::OptimizerStep, 0, -1, 18, 19)};
  auto m = measure_stage_compute(e);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].microbatches, 3);
  EXPECT_NEAR(m[0].fwd_ms, 4, 1e-9);
  EXPECT_NEAR(m[0].bwd_ms, 6, 1e-9);
  EXPECT_NEAR(m[0].optimizer_ms, 1, 1e-9);
}

TEST(Calibration, ScalesEachStagesLayersToWhatItMeasured) {
  ModelProfile p;
  for (double f : {1.0, 3.0, 2.0}) {
    LayerProfile l;
    l.fwd_ms = f;
    l.bwd_ms = 2 * f;
    l.optimizer_ms = 0.25 * f;
    l.activation_bytes = 1000;
    p.layers.push_back(l);
  }
  // Stage 0 (layers 0-1): profiled forward 4, backward 8, optimizer 1.
  // Stage 1 (layer 2): profiled forward 2, backward 4, optimizer 0.5.
  std::vector<MeasuredStageCompute> m(2);
  m[0].range = {0, 1}, m[0].device = 0, m[0].fwd_ms = 6, m[0].bwd_ms = 8, m[0].optimizer_ms = 2;
  m[1].range = {2, 2}, m[1].device = 1, m[1].fwd_ms = 1, m[1].bwd_ms = 0, m[1].optimizer_ms = 0.5;
  ModelProfile c = calibrate_profile(p, m);
  EXPECT_NEAR(c.layers[0].fwd_ms, 1.5, 1e-12);  // x 6/4
  EXPECT_NEAR(c.layers[1].fwd_ms, 4.5, 1e-12);
  EXPECT_NEAR(c.layers[0].bwd_ms, 2, 1e-12);    // x 8/8
  EXPECT_NEAR(c.layers[1].optimizer_ms, 1.5, 1e-12);  // x 2/1
  EXPECT_NEAR(c.layers[2].fwd_ms, 1, 1e-12);    // x 1/2
  EXPECT_NEAR(c.layers[2].bwd_ms, 4, 1e-12);    // nothing measured: unchanged
  EXPECT_NEAR(c.layers[2].optimizer_ms, 0.5, 1e-12);
  EXPECT_EQ(c.layers[1].activation_bytes, 1000u);  // memory is not compute
  ASSERT_FALSE(c.assumptions.empty());
  EXPECT_NE(c.assumptions.back().find("calibrated in situ"), std::string::npos);
}

TEST(Calibration, OneDevicesOptimizerStepCoversAllItsChunks) {
  // Interleaved: device 0 holds layers 0 and 2 (two chunks), device 1 layer 1.
  ModelProfile p;
  p.layers.resize(3);
  for (auto& l : p.layers) l.fwd_ms = l.bwd_ms = 1, l.optimizer_ms = 1;
  std::vector<MeasuredStageCompute> m(3);
  m[0].range = {0, 0}, m[0].device = 0, m[0].optimizer_ms = 4;
  m[1].range = {1, 1}, m[1].device = 1, m[1].optimizer_ms = 3;
  m[2].range = {2, 2}, m[2].device = 0, m[2].optimizer_ms = 4;
  ModelProfile c = calibrate_profile(p, m);
  EXPECT_NEAR(c.layers[0].optimizer_ms + c.layers[2].optimizer_ms, 4, 1e-12);
  EXPECT_NEAR(c.layers[1].optimizer_ms, 3, 1e-12);
}

TEST(Calibration, ActionOverheadIsTheTimeBetweenEventsPerAction) {
  using K = EventKind;
  // Device 0 after its warm-up step (ends at 10 ms): 0.2 ms to the first
  // forward, a send right after it, 0.3 ms to the next forward, 0.1 to the
  // backward, 0.5 before the step (its wait for sends: not counted).
  // 0.6 ms over 4 actions (2 forwards, a backward, the step) = 150 us.
  std::vector<Event> e{ev(K::Forward, 0, 0, 0, 9, 0, 0),          ev(K::OptimizerStep, 0, -1, 9, 10),
                       ev(K::Forward, 0, 0, 10.2, 12, 0, 0),      ev(K::Send, 0, 0, 12, 12.1, 0, 0),
                       ev(K::Forward, 0, 1, 12.4, 14, 0, 0),      ev(K::Recompute, 0, 1, 14.1, 14.5, 0, 0),
                       ev(K::Backward, 0, 1, 14.1, 16, 0, 0),     ev(K::OptimizerStep, 0, -1, 16.5, 17)};
  auto us = fit_action_overhead_us(e);
  ASSERT_TRUE(us);
  EXPECT_NEAR(*us, 150, 1e-6);
  EXPECT_FALSE(fit_action_overhead_us(std::vector<Event>{}));
  // A second run a minute later (in-situ calibration at several sizes): its
  // own gaps count, the minute between the runs does not.
  std::vector<Event> later = e;
  for (auto& x : later) x.start_ns += 60'000'000'000LL, x.end_ns += 60'000'000'000LL;
  auto both = fit_action_overhead_us(std::vector<std::vector<Event>>{e, later});
  ASSERT_TRUE(both);
  EXPECT_NEAR(*both, 150, 1e-6);
}

TEST(Calibration, SendCostFromEventsAsPerMessageTimePlusRate) {
  std::vector<Event> e;
  auto send = [&](double at_ms, std::int64_t bytes, double us) {
    Event s = ev(EventKind::Send, 0, 0, at_ms, at_ms + us / 1000);
    s.bytes = bytes;
    e.push_back(s);
  };
  // The first iteration (to the step ending at 10 ms): a 5 ms send meeting
  // the connection's set-up, left out.
  send(1, 1000000, 5000);
  e.push_back(ev(EventKind::OptimizerStep, 0, -1, 9, 10));
  // Then the means per size: 1 MB {100, 100, 400} = 200 us, 3 MB {400, 400}
  // = 400 us: 100 us per MB (80 Gbit/s) after 100 us per message. The stall
  // of 400 us counts: the iteration waited for it.
  for (double us : {100, 100, 400}) send(11, 1000000, us);
  for (double us : {400, 400}) send(12, 3000000, us);
  e.push_back(ev(EventKind::OptimizerStep, 0, -1, 19, 20));
  auto fit = fit_send_cost(e);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->per_message_us, 100, 1e-6);
  EXPECT_NEAR(fit->gbps, 80, 1e-6);
  EXPECT_FALSE(fit_send_cost({}));
}

// Two devices: device 1 busier (longer events) with larger gaps. The fit
// is device 1's gaps per action, not the mean over both devices.
TEST(Calibration, ActionOverheadIsTheBusiestDevices) {
  using K = EventKind;
  // Device 0: forwards of 1 ms with 0.1 ms gaps; device 1: 3 ms with 0.4 ms.
  std::vector<Event> e{ev(K::OptimizerStep, 0, -1, 0, 1),       ev(K::Forward, 0, 0, 1.1, 2.1, 0, 0),
                       ev(K::Forward, 0, 1, 2.2, 3.2, 0, 0),    ev(K::OptimizerStep, 0, -1, 3.5, 4),
                       ev(K::OptimizerStep, 1, -1, 0, 1),       ev(K::Forward, 1, 0, 1.4, 4.4, 1, 1),
                       ev(K::Recv, 1, 1, 4.4, 9.4, 1, 1),       ev(K::Forward, 1, 1, 9.8, 12.8, 1, 1),
                       ev(K::OptimizerStep, 1, -1, 13, 13.5)};
  // Device 1: gaps 0.4 + 0.4 (the step's wait not counted) over 2 forwards
  // and a step = 266.7 us; its receive's 5 ms wait is not busy time, so it
  // stays the busiest through its 6 ms of forwards against device 0's 2 ms.
  auto us = fit_action_overhead_us(e);
  ASSERT_TRUE(us);
  EXPECT_NEAR(*us, 800.0 / 3, 1e-6);
}

// Two runs of one partition: each stage's figures the runs' plain mean (each
// run counts once), microbatches summed; a different partition is refused.
TEST(Calibration, RunsOfOnePartitionAreAveragedStageByStage) {
  auto stage = [](int first, int last, int device, int mb, double f, double b, double w, double opt) {
    MeasuredStageCompute m;
    m.range = {first, last};
    m.device = device;
    m.microbatches = mb;
    m.fwd_ms = f;
    m.bwd_ms = b;
    m.bwd_weight_ms = w;
    m.optimizer_ms = opt;
    return m;
  };
  const std::vector<MeasuredStageCompute> a{stage(0, 1, 0, 8, 2.0, 4.0, -1, 1.0), stage(2, 2, 1, 8, 1.0, 3.0, -1, 0.5)};
  const std::vector<MeasuredStageCompute> b{stage(0, 1, 0, 24, 3.0, 6.0, -1, 2.0), stage(2, 2, 1, 24, 2.0, 1.0, -1, 1.5)};
  auto mean = mean_stage_compute({a, b});
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_DOUBLE_EQ(mean[0].fwd_ms, 2.5);
  EXPECT_DOUBLE_EQ(mean[0].bwd_ms, 5.0);
  EXPECT_DOUBLE_EQ(mean[0].optimizer_ms, 1.5);
  EXPECT_EQ(mean[0].microbatches, 32);
  EXPECT_DOUBLE_EQ(mean[1].fwd_ms, 1.5);
  EXPECT_DOUBLE_EQ(mean[1].bwd_ms, 2.0);
  EXPECT_DOUBLE_EQ(mean[1].optimizer_ms, 1.0);
  EXPECT_LT(mean[1].bwd_weight_ms, 0);
  // Split backwards: W averaged too.
  auto split = mean_stage_compute({{stage(0, 2, 0, 4, 1, 4, 1.0, 0)}, {stage(0, 2, 0, 4, 1, 4, 3.0, 0)}});
  EXPECT_DOUBLE_EQ(split[0].bwd_weight_ms, 2.0);
  EXPECT_TRUE(mean_stage_compute({}).empty());
  EXPECT_THROW(mean_stage_compute({a, {stage(0, 0, 0, 8, 1, 1, -1, 1), stage(1, 2, 1, 8, 1, 1, -1, 1)}}), std::invalid_argument);
  EXPECT_THROW(mean_stage_compute({a, {a[0]}}), std::invalid_argument);
  EXPECT_THROW(mean_stage_compute({{a[0]}, {stage(0, 1, 0, 8, 1, 1, 0.5, 1)}}), std::invalid_argument);
}

}  // namespace
}  // namespace pw
