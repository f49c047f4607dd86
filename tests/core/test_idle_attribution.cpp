// Idle-time attribution: every cause on hand-made event sets (the expected
// nanoseconds worked out by hand in the comments), and the closed-form
// bubble of balanced GPipe and 1F1B simulations.
#include <gtest/gtest.h>

#include <map>

#include "core/analysis/critical_path.h"
#include "core/analysis/idle_attribution.h"
#include "core/analysis/prediction_diff.h"
#include "core/analysis/suggestions.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"

using namespace pw;

namespace {

Event ev(int stage, EventKind k, std::int64_t a, std::int64_t b, int mb = 0, int first = -1, int last = -1) {
  Event e;
  e.stage = stage;
  e.kind = k;
  e.start_ns = a;
  e.end_ns = b;
  e.microbatch = mb;
  e.first_layer = first < 0 ? stage : first;
  e.last_layer = last < 0 ? (first < 0 ? stage : first) : last;
  return e;
}
constexpr auto F = EventKind::Forward;
constexpr auto B = EventKind::Backward;
constexpr auto O = EventKind::OptimizerStep;

std::int64_t cause(const StageIteration& s, IdleCause c) { return s.cause_ns[static_cast<int>(c)]; }

std::int64_t sum(const StageIteration& s) {
  std::int64_t t = s.compute_ns;
  for (auto c : s.cause_ns) t += c;
  return t;
}

const StageIteration& at(const Attribution& a, int stage, int iteration = 0) {
  for (const auto& s : a.stage_iterations)
    if (s.stage == stage && s.iteration == iteration) return s;
  throw std::runtime_error("no such stage iteration");
}

void expect_closed(const Attribution& a) {
  for (const auto& s : a.stage_iterations) EXPECT_EQ(sum(s), s.wall_ns()) << "stage " << s.stage << " iteration " << s.iteration;
  // The intervals tile the idle time: their total per stage is wall - compute.
  std::map<std::pair<int, int>, std::int64_t> idle;
  for (const auto& i : a.intervals) idle[{i.stage, i.iteration}] += i.end_ns - i.start_ns;
  for (const auto& s : a.stage_iterations) {
    std::pair<int, int> key{s.stage, s.iteration};
    EXPECT_EQ(idle[key], s.wall_ns() - s.compute_ns);
  }
}

// Two stages, one microbatch: stage 1 waits 10 for the activation (fill),
// stage 0 waits 30 for the gradient (its first backward: fill), stage 1
// then waits 20 at the end while stage 0 still runs its backward (drain).
std::vector<Event> two_stage() {
  return {ev(0, F, 0, 10), ev(1, F, 10, 20), ev(1, B, 20, 40), ev(0, B, 40, 60), ev(0, O, 60, 65), ev(1, O, 40, 45)};
}

}  // namespace

TEST(IdleAttribution, FillAndDrain) {
  auto a = attribute_idle(two_stage());
  expect_closed(a);
  ASSERT_EQ(a.iterations, 1);
  const auto& s0 = at(a, 0);
  const auto& s1 = at(a, 1);
  EXPECT_EQ(s0.wall_ns(), 65);
  EXPECT_EQ(s0.compute_ns, 30);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 30);
  EXPECT_EQ(cause(s0, IdleCause::Optimizer), 5);
  EXPECT_EQ(s1.wall_ns(), 65);
  EXPECT_EQ(cause(s1, IdleCause::Fill), 10);
  EXPECT_EQ(cause(s1, IdleCause::Drain), 20);  // stage 0's last backward ends 20 after stage 1's
  EXPECT_EQ(cause(s1, IdleCause::Imbalance), 0);
  // The waits name whom they waited for.
  for (const auto& i : a.intervals) {
    if (i.cause == IdleCause::Fill) EXPECT_EQ(i.peer, 1 - i.stage);
  }
}

TEST(IdleAttribution, DependencyNamesThePeer) {
  // Stage 0's second forward takes 20: stage 1 waits 10 for it in the steady state.
  std::vector<Event> e = {ev(0, F, 0, 10, 0),  ev(0, F, 10, 30, 1), ev(1, F, 10, 20, 0), ev(1, F, 30, 40, 1),
                          ev(1, B, 40, 50, 1), ev(1, B, 50, 60, 0), ev(0, B, 50, 60, 1), ev(0, B, 60, 70, 0)};
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s1 = at(a, 1);
  EXPECT_EQ(cause(s1, IdleCause::Fill), 10);
  EXPECT_EQ(cause(s1, IdleCause::Dependency), 10);
  ASSERT_EQ(s1.activation_wait_ns.size(), 1u);
  EXPECT_EQ(s1.activation_wait_ns[0], 10);
  bool named = false;
  for (const auto& i : a.intervals)
    if (i.cause == IdleCause::Dependency) {
      EXPECT_EQ(cause_name(i), "wait_activation_from_stage_0");
      EXPECT_EQ(i.microbatch, 1);
      named = true;
    }
  EXPECT_TRUE(named);
  // Stage 0: first backward waits [30, 50) (fill); the second backward
  // follows the last forward: cool-down, but it did not wait.
  EXPECT_EQ(cause(at(a, 0), IdleCause::Fill), 20);
  EXPECT_EQ(cause(at(a, 0), IdleCause::Drain), 0);
  // Stage 1's tail: stage 0's last backward ends 10 after its own.
  EXPECT_EQ(cause(s1, IdleCause::Drain), 10);
}

TEST(IdleAttribution, CoolDownWaitIsDrain) {
  // 1F1B cool-down on stage 0: F0 F1 B0 B1, B1's gradient comes 5 late.
  std::vector<Event> e = {ev(0, F, 0, 10, 0),  ev(0, F, 10, 20, 1), ev(1, F, 10, 20, 0), ev(1, B, 20, 30, 0),
                          ev(1, F, 30, 40, 1), ev(1, B, 40, 50, 1), ev(0, B, 30, 40, 0), ev(0, B, 50, 60, 1)};
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 10);   // [20, 30): first backward
  EXPECT_EQ(cause(s0, IdleCause::Drain), 10);  // [40, 50): a backward after the last forward
  // Stage 1: [20, 30) F1's wait? F1 arrived at 20, stage 1 was busy until 30: no wait.
  EXPECT_EQ(cause(at(a, 1), IdleCause::Dependency), 0);
  EXPECT_EQ(cause(at(a, 1), IdleCause::Fill), 10);
}

TEST(IdleAttribution, TransferFromSimulatorSends) {
  auto e = two_stage();
  Event send = ev(0, EventKind::Send, 10, 14);  // the activation on the link until 14
  e.push_back(send);
  e[1].start_ns = 14, e[1].end_ns = 24, e[2].start_ns = 24, e[2].end_ns = 44;
  e[3].start_ns = 44, e[3].end_ns = 64, e[4].start_ns = 64, e[4].end_ns = 69, e[5].start_ns = 44, e[5].end_ns = 49;
  auto a = attribute_idle(e);
  expect_closed(a);
  EXPECT_EQ(cause(at(a, 1), IdleCause::Fill), 10);
  EXPECT_EQ(cause(at(a, 1), IdleCause::Transfer), 4);
}

TEST(IdleAttribution, EngineReceiveSplitsHostWaitAndTransfer) {
  auto e = two_stage();
  // Stage 1 blocks in its receive from 2 to 12; its forward starts at 13.
  e.push_back(ev(1, EventKind::Recv, 2, 12));
  e[1].start_ns = 13, e[1].end_ns = 20;
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s1 = at(a, 1);
  EXPECT_EQ(cause(s1, IdleCause::HostOverhead), 2 + 1);  // [0, 2) before the receive, [12, 13) after
  EXPECT_EQ(cause(s1, IdleCause::Fill), 8);              // [2, 10): stage 0 computing
  EXPECT_EQ(cause(s1, IdleCause::Transfer), 2);          // [10, 12): on the wire
}

TEST(IdleAttribution, NestedRecomputeAndSwapAreMemoryPolicy) {
  auto e = two_stage();
  // The engine's backward [40, 60) on stage 0 recomputes [40, 45) and swaps in [45, 48).
  e.push_back(ev(0, EventKind::Recompute, 40, 45));
  e.push_back(ev(0, EventKind::SwapIn, 45, 48));
  // Its forward swapped out [6, 10) inside it.
  e.push_back(ev(0, EventKind::SwapOut, 6, 10));
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(cause(s0, IdleCause::Recompute), 5);
  EXPECT_EQ(cause(s0, IdleCause::SwapStall), 3 + 4);
  EXPECT_EQ(s0.compute_ns, 30 - 12);
}

TEST(IdleAttribution, SimulatorSwapInStall) {
  auto e = two_stage();
  // Stage 0's swap-in for microbatch 0 runs beside the wait and ends at 50;
  // the gradient came at 40: [40, 50) is a swap stall.
  e.push_back(ev(0, EventKind::SwapIn, 30, 50));
  e[3].start_ns = 50, e[3].end_ns = 70, e[4].start_ns = 70, e[4].end_ns = 75;
  // Its swap-out [10, 30) overlaps the wait: asynchronous, not a cause.
  e.push_back(ev(0, EventKind::SwapOut, 10, 30));
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 30);
  EXPECT_EQ(cause(s0, IdleCause::SwapStall), 10);
  EXPECT_EQ(s0.compute_ns, 30);
}

TEST(IdleAttribution, SimulatorRecomputeBeforeBackward) {
  auto e = two_stage();
  // The simulator recomputes right before the backward: the wait before it is the backward's.
  e[3].start_ns = 45, e[3].end_ns = 65, e[4].start_ns = 65, e[4].end_ns = 70;
  e.push_back(ev(0, EventKind::Recompute, 40, 45));
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 30);
  EXPECT_EQ(cause(s0, IdleCause::Recompute), 5);
  EXPECT_EQ(cause(s0, IdleCause::HostOverhead), 0);
}

TEST(IdleAttribution, OptimizerWaitHostOverheadImbalanceMigration) {
  // Stage 0: host work 2 between its forwards, a 3 wait for its sends
  // before the step; stage 1's step is long: stage 0 ends 25 early.
  std::vector<Event> e = {ev(0, F, 0, 10, 0),  ev(0, F, 12, 22, 1), ev(1, F, 10, 20, 0), ev(1, F, 22, 32, 1),
                          ev(1, B, 32, 42, 1), ev(1, B, 42, 52, 0), ev(0, B, 42, 52, 1), ev(0, B, 52, 62, 0),
                          ev(0, O, 65, 70),    ev(1, O, 52, 95),    ev(1, EventKind::Migrate, 20, 21, -1)};
  auto a = attribute_idle(e);
  expect_closed(a);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(cause(s0, IdleCause::HostOverhead), 2);
  EXPECT_EQ(cause(s0, IdleCause::Optimizer), 3 + 5);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 20);       // [22, 42): the first backward's gradient
  EXPECT_EQ(cause(s0, IdleCause::Imbalance), 25);  // [70, 95): all backwards were done at 62
  EXPECT_EQ(cause(s0, IdleCause::Drain), 0);
  const auto& s1 = at(a, 1);
  EXPECT_EQ(cause(s1, IdleCause::Migration), 1);
  EXPECT_EQ(cause(s1, IdleCause::Optimizer), 43);
}

TEST(IdleAttribution, IterationsFromOptimizerSteps) {
  // Two iterations of the two-stage set, the second shifted by 65.
  auto e = two_stage();
  for (auto x : two_stage()) {
    x.start_ns += 65, x.end_ns += 65;
    e.push_back(x);
  }
  auto a = attribute_idle(e);
  expect_closed(a);
  ASSERT_EQ(a.iterations, 2);
  // Stage 1's first iteration ends with its own step at 45; the second
  // starts there and waits [45, 75) for stage 0's forward: fill.
  EXPECT_EQ(at(a, 1, 0).wall_ns(), 45);
  EXPECT_EQ(at(a, 1, 1).wall_ns(), 130 - 45);
  EXPECT_EQ(cause(at(a, 1, 1), IdleCause::Fill), 30);
  EXPECT_EQ(cause(at(a, 1, 1), IdleCause::Drain), 20);
  auto only = attribute_idle(e, {1, 1, true});
  ASSERT_EQ(only.stage_iterations.size(), 2u);
  EXPECT_EQ(only.stage_iterations[0].iteration, 1);
  // A stopped run: a third iteration's first forward without its step is left out.
  e.push_back(ev(0, F, 130, 140));
  auto cut = attribute_idle(e);
  EXPECT_EQ(cut.iterations, 2);
  EXPECT_EQ(at(cut, 0, 1).end_ns, 130);
}

// ---- closed forms on the simulator ----

namespace {
struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

Collect simulate_uniform(ScheduleKind kind, int p, int m, double f, double b, double opt, std::vector<double> slowdown = {}) {
  ModelProfile profile;
  for (int l = 0; l < p; ++l) {
    LayerProfile L;
    L.fwd_ms = f;
    L.bwd_ms = b;
    L.optimizer_ms = opt;
    L.activation_bytes = 1 << 20;
    L.input_bytes = 1 << 18;
    profile.layers.push_back(L);
  }
  Plan plan = uniform_partition(p, p);
  auto sched = make_schedule(kind, p, m, 1);
  DeviceSpec dev;
  dev.memory_bytes = 1ull << 40;
  dev.link_gbps = 1e12;  // transfers round to 0 ns
  dev.host_link_gbps = 1e12;
  SimInput in{&profile, &plan, sched.get(), dev, 1, slowdown};
  Collect c;
  simulate(in, &c);
  return c;
}
}  // namespace

class BubbleClosedForm : public ::testing::TestWithParam<std::tuple<ScheduleKind, int, int, double>> {};

TEST_P(BubbleClosedForm, FillPlusDrainIsTheBubble) {
  auto [kind, p, m, opt] = GetParam();
  const double f = 1.0, b = 2.0;
  auto c = simulate_uniform(kind, p, m, f, b, opt);
  auto a = attribute_idle(c.events);
  expect_closed(a);
  ASSERT_EQ(static_cast<int>(a.stage_iterations.size()), p);
  // REFERENCE.md: iteration (m + p - 1)(f + b) (+ the step); each stage idles (p - 1)(f + b).
  const std::int64_t unit = 1'000'000;  // 1 ms
  for (const auto& s : a.stage_iterations) {
    EXPECT_EQ(s.wall_ns(), static_cast<std::int64_t>(((m + p - 1) * (f + b) + opt) * unit)) << "stage " << s.stage;
    EXPECT_EQ(s.compute_ns, static_cast<std::int64_t>(m * (f + b) * unit));
    EXPECT_EQ(cause(s, IdleCause::Fill) + cause(s, IdleCause::Drain), static_cast<std::int64_t>((p - 1) * (f + b) * unit))
        << "stage " << s.stage;
    for (IdleCause x : {IdleCause::Dependency, IdleCause::Transfer, IdleCause::HostOverhead, IdleCause::Imbalance,
                        IdleCause::SwapStall, IdleCause::Recompute})
      EXPECT_EQ(cause(s, x), 0) << to_string(x) << " on stage " << s.stage;
    EXPECT_EQ(cause(s, IdleCause::Optimizer), static_cast<std::int64_t>(opt * unit));
  }
  // The first stage never waits for an activation, the last fills only for it.
  EXPECT_EQ(cause(at(a, p - 1), IdleCause::Fill), static_cast<std::int64_t>((p - 1) * f * unit));
}

INSTANTIATE_TEST_SUITE_P(Schedules, BubbleClosedForm,
                         ::testing::Values(std::make_tuple(ScheduleKind::GPipe, 4, 8, 0.0),
                                           std::make_tuple(ScheduleKind::GPipe, 3, 5, 0.5),
                                           std::make_tuple(ScheduleKind::OneFOneB, 4, 8, 0.0),
                                           std::make_tuple(ScheduleKind::OneFOneB, 4, 4, 0.5),
                                           std::make_tuple(ScheduleKind::OneFOneB, 8, 32, 0.25),
                                           std::make_tuple(ScheduleKind::GPipe, 2, 1, 0.0)));

TEST(IdleAttribution, SlowStageShowsAsItsNeighboursDependencyWaits) {
  const int p = 4, m = 16;
  auto c = simulate_uniform(ScheduleKind::OneFOneB, p, m, 1.0, 2.0, 0.0, {1, 1, 2, 1});
  auto a = attribute_idle(c.events);
  expect_closed(a);
  const auto& after = at(a, 3);
  const auto& before = at(a, 1);
  ASSERT_GE(after.activation_wait_ns.size(), 3u);
  ASSERT_GE(before.gradient_wait_ns.size(), 3u);
  // In the steady state stage 2 takes 2 x 3 ms per microbatch, its
  // neighbours 3 ms: each waits about 3 ms per microbatch, all on stage 2.
  EXPECT_GT(after.activation_wait_ns[2], (m / 2) * 3'000'000);
  EXPECT_GT(before.gradient_wait_ns[2], (m / 2) * 3'000'000);
  EXPECT_EQ(cause(after, IdleCause::Dependency), after.activation_wait_ns[2]);
  EXPECT_EQ(cause(before, IdleCause::Dependency), before.gradient_wait_ns[2]);
  // The slow stage itself does not wait in the steady state.
  EXPECT_EQ(cause(at(a, 2), IdleCause::Dependency), 0);
}

// ---- critical path ----

TEST(CriticalPath, HandWorkedTwoStages) {
  auto e = two_stage();
  auto a = attribute_idle(e);
  auto cp = critical_path(e, a, 0);
  // F0 on stage 0 [0, 10), F0 on stage 1 [10, 20), its backward [20, 40),
  // stage 0's backward [40, 60), its step [60, 65).
  EXPECT_EQ(cp.start_ns, 0);
  EXPECT_EQ(cp.end_ns, 65);
  ASSERT_EQ(cp.steps.size(), 5u);
  EXPECT_EQ(cp.steps[0].stage, 0);
  EXPECT_EQ(cp.steps[1].stage, 1);
  EXPECT_EQ(cp.steps[2].kind, EventKind::Backward);
  EXPECT_EQ(cp.steps[3].stage, 0);
  EXPECT_FALSE(cp.steps[4].compute);
  EXPECT_EQ(cp.steps[4].cause, IdleCause::Optimizer);
  EXPECT_EQ(cp.stage_ns[0], 35);
  EXPECT_EQ(cp.stage_ns[1], 30);
  EXPECT_EQ(cp.compute_ns, 60);
}

TEST(CriticalPath, TransferIsOnThePath) {
  auto e = two_stage();
  e.push_back(ev(1, EventKind::Recv, 2, 12));
  e[1].start_ns = 13, e[1].end_ns = 20;
  auto a = attribute_idle(e);
  auto cp = critical_path(e, a, 0);
  EXPECT_EQ(cp.length_ns(), 65);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::Transfer)], 2);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::HostOverhead)], 1);  // [12, 13) after the receive
}

TEST(CriticalPath, BalancedPipelineIsAllCompute) {
  auto c = simulate_uniform(ScheduleKind::OneFOneB, 4, 8, 1.0, 2.0, 0.0);
  auto a = attribute_idle(c.events);
  auto cp = critical_path(c.events, a, 0);
  EXPECT_EQ(cp.length_ns(), static_cast<std::int64_t>((8 + 3) * 3.0 * 1'000'000));
  EXPECT_EQ(cp.compute_ns, cp.length_ns());
  std::int64_t total = 0;
  for (auto x : cp.stage_ns) total += x;
  EXPECT_EQ(total, cp.length_ns());
}

TEST(CriticalPath, NamesTheSlowStage) {
  const int m = 16;
  auto c = simulate_uniform(ScheduleKind::OneFOneB, 4, m, 1.0, 2.0, 0.0, {1, 1, 2, 1});
  auto a = attribute_idle(c.events);
  auto cp = critical_path(c.events, a, 0);
  EXPECT_EQ(cp.length_ns(), at(a, 0).wall_ns());
  auto busiest = std::max_element(cp.stage_ns.begin(), cp.stage_ns.end()) - cp.stage_ns.begin();
  EXPECT_EQ(busiest, 2);
  // Stage 2's work (2 x 3 ms per microbatch) is most of the path; where
  // chains tie the walk may cross to a neighbour for one action.
  EXPECT_GE(cp.stage_ns[2], (m - 1) * 6'000'000);
  EXPECT_GT(2 * cp.stage_ns[2], cp.length_ns());
}

// ---- predicted vs measured ----

TEST(PredictionDiff, RatiosAndFirstDivergence) {
  auto predicted = two_stage();
  auto measured = two_stage();
  // Stage 1's backward took 30 instead of 20: everything after it starts 10 later.
  measured[2].end_ns = 50;
  measured[3].start_ns = 50, measured[3].end_ns = 70, measured[4].start_ns = 70, measured[4].end_ns = 75;
  measured[5].start_ns = 50, measured[5].end_ns = 55;
  auto ma = attribute_idle(measured), pa = attribute_idle(predicted);
  auto d = compare_prediction(measured, ma, 0, predicted, pa, 0, 5);
  EXPECT_EQ(d.measured_iteration_ns, 75);
  EXPECT_EQ(d.predicted_iteration_ns, 65);
  bool seen = false;
  for (const auto& k : d.kinds)
    if (k.stage == 1 && k.kind == EventKind::Backward) {
      EXPECT_DOUBLE_EQ(k.ratio(), 1.5);
      seen = true;
    } else {
      EXPECT_DOUBLE_EQ(k.ratio(), 1.0) << k.stage << " " << to_string(k.kind);
    }
  EXPECT_TRUE(seen);
  // Stage 0's backward and stage 1's step both start at 50, predicted 40:
  // the first in time, the lower stage on a tie.
  ASSERT_TRUE(d.divergence);
  EXPECT_EQ(d.divergence->stage, 0);
  EXPECT_EQ(d.divergence->kind, EventKind::Backward);
  EXPECT_EQ(d.divergence->measured_offset_ns, 50);
  EXPECT_EQ(d.divergence->predicted_offset_ns, 40);
  // Within a threshold of 10, nothing diverges.
  EXPECT_FALSE(compare_prediction(measured, ma, 0, predicted, pa, 0, 10).divergence);
}

TEST(Suggestions, DescribePlanChange) {
  Plan a = uniform_partition(8, 2), b = uniform_partition(8, 2);
  b.stages[0].last_layer = 5;
  b.stages[1].first_layer = 6;
  b.policy[7] = MemoryPolicy::Recompute;
  EXPECT_EQ(describe_plan_change(a, b), "layers 4-5 move from stage 1 to stage 0; layer 7: keep -> recompute");
  EXPECT_EQ(describe_plan_change(a, a), "the same plan");
}

TEST(CriticalPath, ReachesIntoThePeersPreviousIteration) {
  // Two iterations of the two-stage set: stage 1's second iteration starts
  // at its own step's end (45), while stage 0 still runs its first.
  auto e = two_stage();
  for (auto x : two_stage()) {
    x.start_ns += 65, x.end_ns += 65;
    e.push_back(x);
  }
  auto a = attribute_idle(e);
  auto cp = critical_path(e, a, 1);
  EXPECT_EQ(cp.start_ns, 45);
  EXPECT_EQ(cp.end_ns, 130);
  std::int64_t covered = 0;
  for (const auto& s : cp.steps) covered += s.end_ns - s.start_ns;
  EXPECT_EQ(covered, 85);
  // [45, 60) stage 0's first backward, [60, 65) its step, then the second iteration's chain.
  ASSERT_GE(cp.steps.size(), 2u);
  EXPECT_EQ(cp.steps[0].stage, 0);
  EXPECT_EQ(cp.steps[0].kind, EventKind::Backward);
  EXPECT_EQ(cp.steps[1].cause, IdleCause::Optimizer);
  EXPECT_EQ(cp.stage_ns[0], 15 + 5 + 10 + 20 + 5);
  EXPECT_EQ(cp.stage_ns[1], 30);
}

TEST(CriticalPath, StartsFromTheStageThatWorksLast) {
  // Stage 0 ends its step at 70 and idles (imbalance) until stage 1's long
  // step ends at 95: the path ends with stage 1's step, not stage 0's tail.
  std::vector<Event> e = {ev(0, F, 0, 10, 0),  ev(0, F, 12, 22, 1), ev(1, F, 10, 20, 0), ev(1, F, 22, 32, 1),
                          ev(1, B, 32, 42, 1), ev(1, B, 42, 52, 0), ev(0, B, 42, 52, 1), ev(0, B, 52, 62, 0),
                          ev(0, O, 65, 70),    ev(1, O, 52, 95)};
  auto a = attribute_idle(e);
  auto cp = critical_path(e, a, 0);
  EXPECT_EQ(cp.end_ns, 95);
  EXPECT_EQ(cp.length_ns(), 95);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::Imbalance)], 0);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::Drain)], 0);
  ASSERT_FALSE(cp.steps.empty());
  EXPECT_EQ(cp.steps.back().stage, 1);
  EXPECT_EQ(cp.steps.back().cause, IdleCause::Optimizer);
}

// ---- gradient synchronisation (data-parallel replicas, issue 39) ----

namespace {
constexpr auto AR = EventKind::AllReduce;
// Two stages, one microbatch, two replicas of the pipeline (replica 0's
// events). Stage 0's gradients are all-reduced in two buckets, [40, 55)
// (its later layers, ready before its backward ends) and [55, 70); its
// step waits [50, 70) after the backward. Stage 1's one bucket [30, 38)
// ends 8 after its backward.
std::vector<Event> two_stage_synced() {
  return {ev(0, F, 0, 10),  ev(1, F, 10, 20), ev(1, B, 20, 30), ev(0, B, 30, 50), ev(1, AR, 30, 38),
          ev(1, O, 38, 40), ev(0, AR, 40, 55), ev(0, AR, 55, 70), ev(0, O, 70, 75)};
}
}  // namespace

TEST(IdleAttribution, GradientSyncIsTheStepsWaitForTheLastBucket) {
  auto a = attribute_idle(two_stage_synced());
  expect_closed(a);
  ASSERT_EQ(a.iterations, 1);
  const auto& s0 = at(a, 0);
  EXPECT_EQ(s0.wall_ns(), 75);
  EXPECT_EQ(s0.compute_ns, 30);
  EXPECT_EQ(cause(s0, IdleCause::Fill), 20);          // [10, 30): the gradient from stage 1
  EXPECT_EQ(cause(s0, IdleCause::GradientSync), 20);  // [50, 70): the second bucket
  EXPECT_EQ(cause(s0, IdleCause::Optimizer), 5);      // the step itself
  const auto& s1 = at(a, 1);
  EXPECT_EQ(cause(s1, IdleCause::Fill), 10);
  EXPECT_EQ(cause(s1, IdleCause::GradientSync), 8);   // [30, 38)
  EXPECT_EQ(cause(s1, IdleCause::Optimizer), 2);
  EXPECT_EQ(cause(s1, IdleCause::Drain), 20);         // [40, 60): stage 0's backward ends at 50, 20 after its own
  EXPECT_EQ(cause(s1, IdleCause::Imbalance), 15);     // [60, 75)
  // All-reduce runs beside compute: it is neither compute nor busy.
  for (const auto& i : a.intervals)
    if (i.cause == IdleCause::GradientSync) EXPECT_TRUE((i.stage == 0 && i.start_ns == 50 && i.end_ns == 70) ||
                                                        (i.stage == 1 && i.start_ns == 30 && i.end_ns == 38));
  EXPECT_STREQ(to_string(IdleCause::GradientSync), "gradient_sync");
}

TEST(IdleAttribution, HiddenBucketsCostTheStepNothing) {
  // Stage 1's bucket ends at 29, under its backward: the 8 before its step are the step's own.
  auto e = two_stage_synced();
  for (auto& x : e)
    if (x.stage == 1 && x.kind == AR) x.start_ns = 21, x.end_ns = 29;
  auto a = attribute_idle(e);
  expect_closed(a);
  EXPECT_EQ(cause(at(a, 1), IdleCause::GradientSync), 0);
  EXPECT_EQ(cause(at(a, 1), IdleCause::Optimizer), 8 + 2);
  EXPECT_EQ(cause(at(a, 0), IdleCause::GradientSync), 20);
}

TEST(CriticalPath, GradientSyncIsOnThePath) {
  const auto e = two_stage_synced();
  auto a = attribute_idle(e);
  auto cp = critical_path(e, a, 0);
  // Backwards from stage 0's step: step 5, sync 20, B 20 (stage 0), its
  // gradient from stage 1's B 10 and F 10, stage 1's fill on stage 0's F 10.
  EXPECT_EQ(cp.length_ns(), 75);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::GradientSync)], 20);
  EXPECT_EQ(cp.cause_ns[static_cast<int>(IdleCause::Optimizer)], 5);
  EXPECT_EQ(cp.compute_ns, 50);
  bool sync_step = false;
  for (const auto& s : cp.steps)
    sync_step = sync_step || (!s.compute && s.cause == IdleCause::GradientSync && s.stage == 0 && s.start_ns == 50 && s.end_ns == 70);
  EXPECT_TRUE(sync_step);
}

// The simulator's own figure, computed by the simulator as it schedules the
// buckets (done - free at each step), against the attribution of the
// events it emitted: the same nanoseconds by two independent routes.
TEST(IdleAttribution, SyncShareEqualsTheSimulatorsExposedSync) {
  nlohmann::json doc = {
      {"name", "gpt-dp"},
      {"model", {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", 16}, {"hidden", 2560}, {"heads", 32}, {"seq_len", 512}, {"vocab", 50257}}},
      {"training", {{"optimizer", "adam"}, {"batch_size", 256}, {"microbatch_size", 8}, {"iterations", 10}}},
      {"cluster", {{"devices", 32}, {"device", "v100-32g"}, {"gpus_per_node", 8}, {"node_link_gbps", 25}}},
      {"pipeline", {{"stages", 4}, {"schedule", "1f1b"}, {"planner", "uniform"}}},
      {"parallel", {{"data", 8}}}};
  PreparedJob job = prepare_job(parse_job(doc));
  Collect c;
  SimResult r = simulate(job.sim_input(), &c);
  ASSERT_TRUE(r.feasible);
  ASSERT_EQ(r.replicas, 8);
  auto a = attribute_idle(c.events);
  expect_closed(a);
  ASSERT_EQ(a.iterations, 1);
  double exposed_total = 0;
  for (int s = 0; s < 4; ++s) {
    const double want_ns = r.stages[s].sync_exposed_ms * 1e6;
    EXPECT_NEAR(static_cast<double>(cause(at(a, s), IdleCause::GradientSync)), want_ns, 1.0) << "stage " << s;
    exposed_total += want_ns;
  }
  // The job is chosen so that the sync shows (a 25 Gbit/s link between
  // nodes): the comparison is not 0 == 0.
  EXPECT_GT(exposed_total, 1e6);
}
