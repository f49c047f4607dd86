// Idle-time attribution and in-situ calibration know a split backward (the
// zero-bubble schedules' B and W): on simulated runs of every schedule a
// stage's attributed compute is the simulator's busy time less the
// optimizer step, and equals the closed form m x (f + b) per layer; the
// calibration reads B + W as the backward and W apart. Before, both read
// only forward and full backward: a zb-h1 stage of resources/jobs/
// uniform-8stage.json showed 64 ms of compute where it computes 192.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/idle_attribution.h"
#include "core/analysis/steps_per_iteration.h"
#include "core/calibrate/stage_compute.h"
#include "core/job/job_plan.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/job_spec.h"
#include "uniform_pipeline.h"

namespace pw {
namespace {

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

constexpr std::int64_t kMs = 1'000'000;

std::int64_t cause(const StageIteration& s, IdleCause c) { return s.cause_ns[static_cast<int>(c)]; }

// Per stage, over all its iterations: compute and each cause.
struct StageTotals {
  std::int64_t compute = 0, wall = 0;
  std::array<std::int64_t, kIdleCauseCount> causes{};
};
std::vector<StageTotals> totals(const Attribution& a) {
  std::vector<StageTotals> t(a.stages);
  for (const auto& s : a.stage_iterations) {
    t[s.stage].compute += s.compute_ns;
    t[s.stage].wall += s.wall_ns();
    for (int c = 0; c < kIdleCauseCount; ++c) t[s.stage].causes[c] += s.cause_ns[c];
  }
  return t;
}

// Identical layers (f = 1, b = 2 of which W = 0.8, a 0.25 ms step), two per
// virtual stage, on p devices; every schedule that trains a plain model.
struct Case {
  ScheduleKind kind;
  int p, m;
};
std::string name_of(const ::testing::TestParamInfo<Case>& i) {
  std::string n = to_string(i.param.kind) + "_p" + std::to_string(i.param.p) + "_m" + std::to_string(i.param.m);
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

int chunks_of(ScheduleKind k) { return is_v_shape(k) ? 2 : k == ScheduleKind::Interleaved ? 2 : 1; }

LayerProfile layer() {
  LayerProfile L;
  L.fwd_ms = 1;
  L.bwd_ms = 2;
  L.bwd_weight_ms = 0.8;
  L.optimizer_ms = 0.25;
  L.activation_bytes = 1 << 20;
  L.param_bytes = 1 << 10;
  return L;
}

std::int64_t step_ns(const std::vector<Event>& events, int stage) {
  std::int64_t t = 0;
  for (const auto& e : events)
    if (e.stage == stage && e.kind == EventKind::OptimizerStep) t += e.end_ns - e.start_ns;
  return t;
}

// One layer a stage, its optimizer step taking no time.
std::vector<Event> events_without_step_time(ScheduleKind kind, int p, int m) {
  LayerProfile L = layer();
  L.optimizer_ms = 0;
  auto pipe = test::uniform_pipeline(kind, p, m, 1, 1, L);
  Collect c;
  pipe.run(&c);
  return c.events;
}

class SplitBackwardAttribution : public ::testing::TestWithParam<Case> {};

TEST_P(SplitBackwardAttribution, ComputeIsTheSimulatorsBusyTimePerStage) {
  const auto [kind, p, m] = GetParam();
  const int chunks = chunks_of(kind), per_stage = 2;
  auto pipe = test::uniform_pipeline(kind, p, m, chunks, per_stage, layer());
  Collect c;
  SimResult r = pipe.run(&c);
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = optimizer_steps_per_iteration(kind, m);
  Attribution a = attribute_idle(c.events, ao);
  ASSERT_EQ(a.stages, p);
  ASSERT_GE(a.iterations, 1);
  const auto t = totals(a);
  // The simulator's busy time covers every iteration it ran (PipeDream
  // runs two and reports their mean): the steps taken tell how many.
  const double iterations = static_cast<double>(a.iterations);
  for (int d = 0; d < p; ++d) {
    SCOPED_TRACE("stage " + std::to_string(d));
    const auto& s = t[d];
    std::int64_t sum = s.compute;
    for (auto x : s.causes) sum += x;
    EXPECT_EQ(sum, s.wall);
    // Closed form: m microbatches x the device's layers x (f + b), per iteration.
    const std::int64_t closed = static_cast<std::int64_t>(m) * chunks * per_stage * 3 * kMs;
    EXPECT_EQ(s.compute, closed * a.iterations);
    // The simulator's busy time: compute, the steps and no recompute (every
    // layer keeps its activations).
    const double busy_ns = r.stages[d].busy_ms * 1e6 * (kind == ScheduleKind::PipeDream ? iterations : 1.0);
    EXPECT_NEAR(static_cast<double>(s.compute + step_ns(c.events, d)), busy_ns, 1.0);
    // Equal stages, no host overhead, free links: nothing is the host's,
    // the links', imbalance or memory policy.
    for (IdleCause x : {IdleCause::HostOverhead, IdleCause::Transfer, IdleCause::Imbalance, IdleCause::Recompute,
                        IdleCause::SwapStall, IdleCause::Migration})
      EXPECT_EQ(s.causes[static_cast<int>(x)], 0) << to_string(x);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, SplitBackwardAttribution,
                         ::testing::Values(Case{ScheduleKind::ZBH1, 4, 8}, Case{ScheduleKind::ZBH1, 3, 3},
                                           Case{ScheduleKind::ZBH2, 4, 8}, Case{ScheduleKind::ZBV, 4, 8},
                                           Case{ScheduleKind::ZBV, 2, 4}, Case{ScheduleKind::DualPipeV, 4, 8},
                                           Case{ScheduleKind::DualPipeV, 3, 6}, Case{ScheduleKind::OneFOneB, 4, 8},
                                           Case{ScheduleKind::GPipe, 4, 8}, Case{ScheduleKind::Interleaved, 4, 8},
                                           Case{ScheduleKind::PipeDream, 4, 8}),
                         name_of);

// ZB-H1 on equal stages: its bubble is (p - 1)(F + B - W) per stage
// (docs/simulator.md), all of it waiting on a peer (fill, drain or a
// dependency): the gradient waits are for B, which passes it on, not W.
TEST(SplitBackwardAttribution, ZbH1BubbleIsTheWaitForPeers) {
  const int p = 4, m = 8;
  Attribution a = attribute_idle(events_without_step_time(ScheduleKind::ZBH1, p, m));
  ASSERT_EQ(a.iterations, 1);
  const double F = 1, B = 1.2, W = 0.8;
  for (const auto& s : a.stage_iterations) {
    SCOPED_TRACE("stage " + std::to_string(s.stage));
    EXPECT_EQ(s.wall_ns() - s.compute_ns, static_cast<std::int64_t>(std::llround((p - 1) * (F + B - W) * kMs)));
    EXPECT_EQ(cause(s, IdleCause::Fill) + cause(s, IdleCause::Drain) + cause(s, IdleCause::Dependency),
              s.wall_ns() - s.compute_ns);
  }
  // Stage 0 fills waiting for the last stage's B of microbatch 0: the
  // gradient comes back through every stage's B.
  bool gradient_fill = false;
  for (const auto& i : a.intervals)
    if (i.stage == 0 && i.cause == IdleCause::Fill && i.gradient) gradient_fill = i.peer == 1;
  EXPECT_TRUE(gradient_fill);
}

// The reported case: `simulate resources/jobs/uniform-8stage.json --set
// pipeline.schedule=zb-h1`, then explain. Each stage holds 4 layers of 1 ms
// forward and 2 ms backward over 16 microbatches: 192 ms of compute, as
// under 1F1B, and no host overhead (the simulated device has none).
TEST(SplitBackwardAttribution, ZbH1OfTheUniformEightStageJobComputesAsOneFOneB) {
  for (const char* schedule : {"1f1b", "zb-h1", "zb-v", "dualpipe-v"}) {
    SCOPED_TRACE(schedule);
    JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/uniform-8stage.json",
                           {std::string("pipeline.schedule=") + schedule});
    PreparedJob prepared = prepare_job(job);
    Collect c;
    SimResult r = simulate(prepared.sim_input(), &c);
    Attribution a = attribute_idle(c.events);
    ASSERT_EQ(a.stages, 8);
    for (const auto& s : a.stage_iterations) {
      SCOPED_TRACE("stage " + std::to_string(s.stage));
      EXPECT_EQ(s.compute_ns, 192 * kMs);
      EXPECT_EQ(cause(s, IdleCause::HostOverhead), 0);
      EXPECT_NEAR(static_cast<double>(s.compute_ns + step_ns(c.events, s.stage)), r.stages[s.stage].busy_ms * 1e6, 1.0);
    }
  }
}

// A step that takes no time still ends its iteration: PipeDream's two
// overlapping iterations were one to the attribution when the model had no
// optimizer time (the simulator left such steps out), with twice the compute.
TEST(SplitBackwardAttribution, EmptyStepsStillDelimitPipeDreamsIterations) {
  const int p = 3, m = 4;
  AttributionOptions ao;
  ao.optimizer_steps_per_iteration = optimizer_steps_per_iteration(ScheduleKind::PipeDream, m);
  Attribution a = attribute_idle(events_without_step_time(ScheduleKind::PipeDream, p, m), ao);
  ASSERT_EQ(a.iterations, 2);
  // The iterations overlap: their windows split the work unevenly, the two hold it all.
  const auto t = totals(a);
  for (int d = 0; d < p; ++d) EXPECT_EQ(t[d].compute, 2 * m * 3 * kMs) << "stage " << d;
}

// ---- calibration ----

// A simulated split run measures the profile it ran: forward, backward
// (B + W) and W alone per stage; a profile off by a factor is calibrated
// back to the one that ran, B and W each.
class SplitBackwardCalibration : public ::testing::TestWithParam<ScheduleKind> {};

TEST_P(SplitBackwardCalibration, MeasuresBAndWAndCalibratesEachBack) {
  const ScheduleKind kind = GetParam();
  const int p = 3, chunks = chunks_of(kind);
  auto pipe = test::uniform_pipeline(kind, p, 2 * p, chunks, 2, layer());
  Collect c;
  pipe.run(&c);
  auto measured = measure_stage_compute(c.events);
  ASSERT_EQ(static_cast<int>(measured.size()), p * chunks);
  for (const auto& s : measured) {
    SCOPED_TRACE("layers " + std::to_string(s.range.first_layer));
    EXPECT_EQ(s.microbatches, 2 * p);
    EXPECT_NEAR(s.fwd_ms, 2 * 1.0, 1e-6);  // two layers a stage
    EXPECT_NEAR(s.bwd_ms, 2 * 2.0, 1e-6);
    EXPECT_NEAR(s.bwd_weight_ms, 2 * 0.8, 1e-6);
  }
  // A profile whose B is 3x and W 0.5x what ran.
  ModelProfile off = pipe.profile;
  for (auto& l : off.layers) l.bwd_ms = 1.2 * 3 + 0.8 * 0.5, l.bwd_weight_ms = 0.8 * 0.5;
  ModelProfile back = calibrate_profile(off, measured);
  for (const auto& l : back.layers) {
    EXPECT_NEAR(l.bwd_ms, 2.0, 1e-6);
    EXPECT_NEAR(weight_grad_ms(l), 0.8, 1e-6);
    EXPECT_NEAR(l.fwd_ms, 1.0, 1e-6);
  }
  EXPECT_NE(back.assumptions.back().find("weight gradient x"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Schedules, SplitBackwardCalibration,
                         ::testing::Values(ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::DualPipeV));

Event ev(EventKind k, int mb, double start_ms, double end_ms) {
  Event e;
  e.kind = k;
  e.stage = 0;
  e.microbatch = mb;
  e.start_ns = static_cast<std::int64_t>(std::llround(start_ms * kMs));
  e.end_ns = static_cast<std::int64_t>(std::llround(end_ms * kMs));
  e.first_layer = e.last_layer = k == EventKind::OptimizerStep ? -1 : 0;
  if (k == EventKind::OptimizerStep) e.chunk = -1;
  return e;
}

// The engine's B recomputes and swaps in inside itself (W reuses what B
// brought back): B of 5 ms with a 1 ms recompute holds 4 of its own, B of
// 3 ms with a 0.5 ms swap-in 2.5; W of 2 and 3 ms. A backward per
// microbatch: (4 + 2 + 2.5 + 3) / 2 = 5.75 ms, W (2 + 3) / 2 = 2.5 ms.
TEST(SplitBackwardCalibration, HandWorkedBAndWWithNestedPolicyWork) {
  using K = EventKind;
  std::vector<Event> e{ev(K::Forward, 0, 0, 1),   ev(K::Forward, 1, 1, 2),        ev(K::BackwardInput, 0, 2, 7),
                       ev(K::Recompute, 0, 2, 3), ev(K::BackwardWeight, 0, 7, 9), ev(K::BackwardInput, 1, 9, 12),
                       ev(K::SwapIn, 1, 9, 9.5),  ev(K::BackwardWeight, 1, 12, 15), ev(K::OptimizerStep, -1, 15, 16)};
  auto m = measure_stage_compute(e);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].microbatches, 2);
  EXPECT_NEAR(m[0].fwd_ms, 1, 1e-9);
  EXPECT_NEAR(m[0].bwd_ms, 5.75, 1e-9);
  EXPECT_NEAR(m[0].bwd_weight_ms, 2.5, 1e-9);
  // A full backward's run says nothing of W.
  std::vector<Event> full{ev(K::Forward, 0, 0, 1), ev(K::Backward, 0, 1, 4), ev(K::OptimizerStep, -1, 4, 5)};
  EXPECT_LT(measure_stage_compute(full)[0].bwd_weight_ms, 0);
}

// B and W are actions: each costs the host its overhead. Gaps of 0.1 ms
// before F, 0.2 before B, 0.3 before W (the step's wait is not counted):
// 0.6 ms over F, B, W and the step = 150 us.
TEST(SplitBackwardCalibration, ActionOverheadCountsBAndW) {
  using K = EventKind;
  std::vector<Event> e{ev(K::Forward, 0, 0, 1),         ev(K::OptimizerStep, -1, 1, 2), ev(K::Forward, 0, 2.1, 3),
                       ev(K::BackwardInput, 0, 3.2, 4), ev(K::BackwardWeight, 0, 4.3, 5), ev(K::OptimizerStep, -1, 5.5, 6)};
  auto us = fit_action_overhead_us(e);
  ASSERT_TRUE(us);
  EXPECT_NEAR(*us, 150, 1e-6);
}

}  // namespace
}  // namespace pw
