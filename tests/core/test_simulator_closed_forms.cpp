// The simulator against the closed forms of REFERENCE.md, computed here
// independently of the code under test.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "uniform_pipeline.h"

using namespace pw;
using pw::test::Pipeline;
using pw::test::uniform_pipeline;

namespace {
constexpr std::uint64_t MiB = 1 << 20;

// `layers_per_stage` identical layers per virtual stage, no communication.
Pipeline make(ScheduleKind kind, int p, int m, int layers_per_stage, double f, double b, int chunks = 1) {
  LayerProfile L;
  L.fwd_ms = f;
  L.bwd_ms = b;
  L.activation_bytes = MiB;
  L.input_bytes = MiB / 4;
  return uniform_pipeline(kind, p, m, chunks, layers_per_stage, L);
}

struct CountingSink : EventSink {
  std::map<EventKind, int> count;
  std::map<int, std::int64_t> last_end;
  void on_event(const Event& e) override {
    ++count[e.kind];
    last_end[e.stage] = std::max(last_end[e.stage], e.end_ns);
  }
};
}  // namespace

class FlushSchedules : public ::testing::TestWithParam<std::tuple<ScheduleKind, int, int>> {};

TEST_P(FlushSchedules, IterationTimeAndBubbleMatchClosedForm) {
  auto [kind, p, m] = GetParam();
  const double F = 2, B = 4;  // ms per stage
  Pipeline s = make(kind, p, m, 2, F / 2, B / 2);
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (m + p - 1) * (F + B), 1e-6);
  EXPECT_NEAR(r.bubble_fraction, double(p - 1) / (m + p - 1), 1e-9);
  EXPECT_TRUE(r.feasible);
  for (const auto& st : r.stages) EXPECT_NEAR(st.busy_fraction, double(m) / (m + p - 1), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(PM, FlushSchedules,
                         ::testing::Combine(::testing::Values(ScheduleKind::GPipe, ScheduleKind::OneFOneB),
                                            ::testing::Values(1, 2, 4, 7), ::testing::Values(1, 3, 8, 16)));

TEST(Simulator, InFlightMicrobatchesGPipeVersus1F1B) {
  const int p = 4, m = 8;
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    Pipeline s = make(kind, p, m, 1, 1, 2);
    SimResult r = s.run();
    for (int st = 0; st < p; ++st) {
      std::uint64_t in_flight = kind == ScheduleKind::GPipe ? m : std::min(m, p - st);
      EXPECT_EQ(r.stages[st].peak_memory_bytes, in_flight * MiB) << to_string(kind) << " stage " << st;
    }
  }
}

TEST(Simulator, OneFOneBWithFewerMicrobatchesThanStagesDoesNotDeadlock) {
  Pipeline s = make(ScheduleKind::OneFOneB, 8, 2, 1, 1, 2);
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (2 + 8 - 1) * 3.0, 1e-6);
}

TEST(Simulator, AsyncPipeDreamStashesPMinusSWeightVersions) {
  const int p = 4, m = 8;
  Pipeline s = make(ScheduleKind::PipeDream, p, m, 1, 1, 2);
  for (auto& l : s.profile.layers) {
    l.activation_bytes = 0;
    l.input_bytes = 0;
    l.param_bytes = 10 * MiB;
  }
  SimResult r = s.run();
  for (int st = 0; st < p; ++st) {
    // Gradients (1 copy) + (p - s) weight versions.
    std::uint64_t versions = p - st;
    EXPECT_EQ(r.stages[st].peak_memory_bytes, (1 + versions) * 10 * MiB) << "stage " << st;
  }
  // No flush: in steady state every stage is busy all the time.
  EXPECT_NEAR(r.iteration_time_ms, m * 3.0, 1e-6);
  EXPECT_NEAR(r.bubble_fraction, 0.0, 1e-9);
}

TEST(Simulator, InterleavedBubbleIsPMinus1OverVM) {
  for (auto [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{4, 4, 8}, std::tuple{2, 2, 4}, std::tuple{4, 2, 16}}) {
    // Per device F = 2, B = 4 in total, split over v chunks.
    Pipeline s = make(ScheduleKind::Interleaved, p, m, 1, 2.0 / v, 4.0 / v, v);
    SimResult r = s.run();
    double ideal = m * 6.0;
    double bubble = (r.iteration_time_ms - ideal) / ideal;
    EXPECT_NEAR(bubble, double(p - 1) / (v * m), 1e-9) << "p=" << p << " v=" << v << " m=" << m;
  }
}

TEST(Simulator, TransfersAddTwoHopsPerBoundaryToGPipe) {
  const int p = 4, m = 6;
  Pipeline s = make(ScheduleKind::GPipe, p, m, 1, 2, 4);
  for (auto& l : s.profile.layers) l.output_bytes = 125'000'000;  // 1 Gbit
  s.device.link_gbps = 1000;                                     // 1 ms per transfer
  s.device.link_latency_us = 0;
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (m + p - 1) * 6.0 + 2 * (p - 1) * 1.0, 1e-6);
}

TEST(Simulator, SendsOccupyTheSenderOnHostDrivenLinks) {
  // GPipe, 2 stages, f = 1, b = 2, every send costs its sender c = 0.5 ms
  // and the wire nothing. Stage 0 issues a forward every f + c; stage 1's
  // backwards, each followed by its gradient send, every b + c; the last
  // gradient leaves stage 1 when its backward ends and stage 0 needs b more:
  // (m - 1)(f + c) + 2f + (m - 1)(b + c) + 2b.
  const int p = 2, m = 4;
  const double f = 1, b = 2, c = 0.5;
  Pipeline s = make(ScheduleKind::GPipe, p, m, 1, f, b);
  s.device.link_gbps = 1e9;
  s.device.link_latency_us = 0;
  s.device.send_cpu_us = c * 1e3;
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (m - 1) * (f + c) + 2 * f + (m - 1) * (b + c) + 2 * b, 1e-3);
  s.device.send_cpu_us = 0;
  EXPECT_NEAR(s.run().iteration_time_ms, (m + p - 1) * (f + b), 1e-3);
}

TEST(Simulator, ActionOverheadDelaysTheNextActionOfItsStage) {
  // As above with o = 0.5 ms of host work after every action instead of the
  // send cost: each stage starts its next action o after the last ends, and
  // stage 1's first backward and stage 0's end come o later still:
  // (m - 1)(f + o) + 2f + o + (m - 1)(b + o) + 2b + o.
  const int p = 2, m = 4;
  const double f = 1, b = 2, o = 0.5;
  Pipeline s = make(ScheduleKind::GPipe, p, m, 1, f, b);
  s.device.link_gbps = 1e9;
  s.device.link_latency_us = 0;
  s.device.action_overhead_us = o * 1e3;
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (m - 1) * (f + o) + 2 * f + o + (m - 1) * (b + o) + 2 * b + o, 1e-3);
  // Not compute: the stages are no busier for it.
  s.device.action_overhead_us = 0;
  SimResult plain = s.run();
  EXPECT_NEAR(r.stages[0].busy_ms, plain.stages[0].busy_ms, 1e-6);
}

TEST(Simulator, RecomputeCostsOneMoreForwardAndKeepsOnlyInputs) {
  const int p = 2, m = 4;
  Pipeline s = make(ScheduleKind::OneFOneB, p, m, 1, 1, 2);
  s.plan.policy.assign(s.plan.policy.size(), MemoryPolicy::Recompute);
  SimResult r = s.run();
  EXPECT_NEAR(r.iteration_time_ms, (m + p - 1) * (1 + 2 + 1.0), 1e-6);
  // Stage 0 holds 2 microbatches' inputs plus one rematerialised activation.
  EXPECT_EQ(r.stages[0].peak_memory_bytes, 2 * (MiB / 4) + MiB);
}

TEST(Simulator, SwapHiddenBehindComputeCostsNoTimeAndFreesMemory) {
  const int p = 4, m = 8;
  Pipeline keep = make(ScheduleKind::OneFOneB, p, m, 1, 10, 20);
  SimResult rk = keep.run();
  Pipeline swap = make(ScheduleKind::OneFOneB, p, m, 1, 10, 20);
  // Not the last stage: there a backward follows its own forward at once,
  // so the round trip over the host link cannot hide (VPipe never swaps there).
  for (int l = 0; l < p - 1; ++l) swap.plan.policy[l] = MemoryPolicy::Swap;
  swap.device.host_link_gbps = 100;  // 1 MiB in ~0.08 ms, far below compute
  CountingSink sink;
  SimResult rs = swap.run(&sink);
  EXPECT_NEAR(rs.iteration_time_ms, rk.iteration_time_ms, 0.01);
  EXPECT_LT(rs.stages[0].peak_memory_bytes, rk.stages[0].peak_memory_bytes);
  EXPECT_EQ(sink.count[EventKind::SwapOut], (p - 1) * m);
  EXPECT_EQ(sink.count[EventKind::SwapIn], (p - 1) * m);
}

TEST(Simulator, SlowHostLinkMakesSwapTheBottleneck) {
  const int p = 1, m = 4;
  Pipeline s = make(ScheduleKind::OneFOneB, p, m, 1, 1, 2);
  s.plan.policy.assign(1, MemoryPolicy::Swap);
  s.profile.layers[0].activation_bytes = 125'000'000;  // 1 Gbit each way
  s.device.host_link_gbps = 100;                       // 10 ms per swap
  SimResult r = s.run();
  // F0, swap-out 0 (10 ms), swap-in 0 (10 ms) before B0, repeated: each
  // microbatch costs forward + two copies + backward in sequence here.
  EXPECT_NEAR(r.iteration_time_ms, m * (1 + 10 + 10 + 2.0), 1e-6);
}

TEST(Simulator, OutOfMemoryNamesStageAndBytes) {
  Pipeline s = make(ScheduleKind::OneFOneB, 4, 8, 1, 1, 2);
  s.device.memory_bytes = 3 * MiB;  // stage 0 needs 4 MiB, stage 1 needs 3
  SimResult r = s.run();
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.oom_stage, 0);
  EXPECT_NE(r.reason.find("stage 0 needs"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(std::to_string(4 * MiB) + " bytes"), std::string::npos) << r.reason;
}

TEST(Simulator, EmitsOneEventPerActionAndTransfer) {
  const int p = 3, m = 5;
  Pipeline s = make(ScheduleKind::OneFOneB, p, m, 1, 1, 2);
  for (auto& l : s.profile.layers) {
    l.output_bytes = 1000;
    l.optimizer_ms = 0.5;
  }
  CountingSink sink;
  SimResult r = s.run(&sink);
  EXPECT_EQ(sink.count[EventKind::Forward], p * m);
  EXPECT_EQ(sink.count[EventKind::Backward], p * m);
  EXPECT_EQ(sink.count[EventKind::OptimizerStep], p);
  EXPECT_EQ(sink.count[EventKind::Send], 2 * (p - 1) * m);
  EXPECT_EQ(r.events, static_cast<std::uint64_t>(2 * p * m + p + 2 * (p - 1) * m));
  std::int64_t last = 0;
  for (auto& [stage, end] : sink.last_end) last = std::max(last, end);
  EXPECT_NEAR(last / 1e6, r.iteration_time_ms, 1e-9);
}

TEST(Simulator, RejectsPlanThatDoesNotMatchSchedule) {
  Pipeline s = make(ScheduleKind::OneFOneB, 4, 8, 1, 1, 2);
  s.plan = uniform_partition(4, 2);
  EXPECT_THROW(s.run(), std::invalid_argument);
}

TEST(Simulator, SlowDeviceBecomesTheBottleneck) {
  const int p = 4, m = 16;
  Pipeline s = make(ScheduleKind::OneFOneB, p, m, 1, 1, 2);
  SimInput in{&s.profile, &s.plan, s.schedule.get(), s.device, 1};
  in.slowdown = {2, 2, 2, 2};  // everything twice as slow: the closed form with F+B = 6
  EXPECT_NEAR(simulate(in).iteration_time_ms, (m + p - 1) * 6.0, 1e-6);
  in.slowdown = {1, 1, 2, 1};
  SimResult r = simulate(in);
  // The slow stage runs m steps of 6 ms; fill and drain add less than a
  // uniform pipeline of slow stages would.
  EXPECT_GT(r.iteration_time_ms, m * 6.0);
  EXPECT_LT(r.iteration_time_ms, (m + p - 1) * 6.0);
  EXPECT_GT(r.stages[2].busy_fraction, 0.9);
  in.slowdown = {1, 2};
  EXPECT_THROW(simulate(in), std::invalid_argument);
}
