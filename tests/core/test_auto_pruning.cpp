// pipeline.schedule "auto" skips generating orders for plans whose busiest
// device is already slower than a plan in hand (plan_work_bound_ms,
// best_generated's beat_ms): the choice must be exactly the unpruned one,
// and the skipped generations must be real.
#include <gtest/gtest.h>

#include <random>

#include "core/plan/generated_plan.h"
#include "core/plan/iteration_bound.h"
#include "core/plan/plan.h"
#include "core/plan/planner.h"
#include "core/plan/vpipe_planner.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "planner_instances.h"

using namespace pw;

namespace {

ModelProfile profile_of(const std::vector<double>& fwd, const std::vector<double>& bwd) {
  ModelProfile prof;
  for (size_t l = 0; l < fwd.size(); ++l) {
    LayerProfile L;
    L.name = "l" + std::to_string(l);
    L.fwd_ms = fwd[l];
    L.bwd_ms = bwd[l];
    L.activation_bytes = 1 << 20;
    prof.layers.push_back(L);
  }
  return prof;
}

Plan plan_of(const std::vector<StageRange>& stages, int layers) {
  Plan p;
  p.stages = stages;
  p.policy.assign(layers, MemoryPolicy::Keep);
  return p;
}

// Everything but the time it took.
nlohmann::json choice_of(const Plan& p) {
  nlohmann::json j = to_json(p);
  j.erase("planning_time_ms");
  return j;
}

}  // namespace

TEST(PlanWorkBound, ClosedForms) {
  // One chunk: stages [0,1] and [2,3] of F 1, 2, 3, 4 and B twice F; m 4:
  // the second stage's (3 + 4) x 3 = 21 per microbatch, 84 in all.
  ModelProfile prof = profile_of({1, 2, 3, 4}, {2, 4, 6, 8});
  PlanRequest req;
  req.profile = &prof;
  req.stages = 2;
  req.chunks = 1;
  req.microbatches = 4;
  Plan p = plan_of({{0, 1}, {2, 3}}, 4);
  EXPECT_NEAR(plan_work_bound_ms(req, p), 84.0, 1e-9);
  // Recomputing layer 0 adds its forward to the first stage only: 3 x 3 + 1
  // = 10 < 21, the bound stays.
  p.policy[0] = MemoryPolicy::Recompute;
  EXPECT_NEAR(plan_work_bound_ms(req, p), 84.0, 1e-9);
  // A slowdown of 3 on device 0: (9 + 1) x 3 = 30 per microbatch, 120.
  req.slowdown = {3.0, 1.0};
  EXPECT_NEAR(plan_work_bound_ms(req, p), 120.0, 1e-9);
  // A V over 2 devices: device 0 holds virtual stages 0 and 3 (layers 0
  // and 3: 3 + 12 = 15), device 1 stages 1 and 2 (6 + 9 = 15); m 4: 60.
  req.slowdown.clear();
  req.chunks = 2;
  Plan v = plan_of({{0, 0}, {1, 1}, {2, 2}, {3, 3}}, 4);
  EXPECT_NEAR(plan_work_bound_ms(req, v), 60.0, 1e-9);
  v.stages = {{0, 1}, {2, 3}};  // one chunk per device: not a V's plan
  EXPECT_EQ(plan_work_bound_ms(req, v), 0.0);
  // Stages replicated (PipeDream) share their microbatches: no bound.
  Plan r = plan_of({{0, 1}, {2, 3}}, 4);
  r.replicas = {2, 1};
  req.chunks = 1;
  EXPECT_EQ(plan_work_bound_ms(req, r), 0.0);
}

// The simulator, judging each family's plan under its own order, never
// runs an iteration shorter than the plan's work bound.
TEST(PlanWorkBound, NeverAboveASimulatedFamilyPlan) {
  std::mt19937_64 rng(43);
  for (int i = 0; i < 6; ++i) {
    const int p = 2 + static_cast<int>(rng() % 3), m = 2 * p + static_cast<int>(rng() % 4);
    for (auto [kind, chunks] : {std::pair{ScheduleKind::OneFOneB, 1}, std::pair{ScheduleKind::ZBH2, 1},
                                std::pair{ScheduleKind::ZBV, 2}, std::pair{ScheduleKind::DualPipeV, 2}}) {
      auto x = plantest::random_instance(rng, 4 * p, p, m, kind);
      if (i % 2) x.req.iteration_cost = IterationCost::Span;
      Plan plan = run_planner("vpipe", x.req);
      ASSERT_FALSE(plan.stages.empty());
      const double bound = plan_work_bound_ms(x.req, plan);
      EXPECT_GT(bound, 0);
      EXPECT_LE(bound, plan.iteration_time_ms * (1 + 1e-9)) << to_string(kind) << " instance " << i;
    }
  }
}

// Seeded random instances, auto with and without the pruning: the same
// plan (family, partition, policies, order, times), and the generations
// the pruned run skipped are exactly those it did not make.
TEST(AutoPruning, SameChoiceAsUnprunedWithFewerGenerations) {
  std::mt19937_64 rng(4343);
  std::int64_t skipped = 0, saved = 0;
  for (int i = 0; i < 8; ++i) {
    const int p = 2 + static_cast<int>(rng() % 2), m = 2 * p + static_cast<int>(rng() % 3);
    auto x = plantest::random_instance(rng, 5 * p, p, m);
    x.req.auto_schedule = true;
    if (i % 3 == 2) x.req.iteration_cost = IterationCost::Span;
    PlanRequest whole = x.req;
    whole.prune_orders = false;
    const GeneratedPlanWork w0 = generated_plan_work();
    Plan full = run_planner("vpipe", whole);
    const GeneratedPlanWork w1 = generated_plan_work();
    Plan pruned = run_planner("vpipe", x.req);
    const GeneratedPlanWork w2 = generated_plan_work();
    EXPECT_EQ(choice_of(pruned), choice_of(full)) << "instance " << i;
    EXPECT_EQ(w1.skipped, w0.skipped) << "instance " << i;  // unpruned skips nothing
    const std::int64_t made_full = w1.generated - w0.generated, made = w2.generated - w1.generated;
    EXPECT_EQ(made + (w2.skipped - w1.skipped), made_full) << "instance " << i;
    skipped += w2.skipped - w1.skipped;
    saved += made_full - made;
  }
  // The pruning has to fire on these instances, or this test guards nothing.
  EXPECT_GT(skipped, 0);
  EXPECT_EQ(saved, skipped);
}

// Every family auto plans on a placement seeds vpipe's search with the same
// PipeDream partition: the DP runs once per placement (p stages, and a V's
// 2p), and not at all when the same request is planned again.
TEST(AutoPruning, PipeDreamSeedOncePerPlacement) {
  std::mt19937_64 rng(77);
  auto x = plantest::random_instance(rng, 12, 3, 6);
  x.req.auto_schedule = true;
  ASSERT_EQ(auto_schedule_candidates(x.req).size(), 9u);  // 4 one-chunk and 5 V candidates
  const std::int64_t s0 = vpipe_work().pipedream_seeds;
  Plan first = run_planner("vpipe", x.req);
  const std::int64_t s1 = vpipe_work().pipedream_seeds;
  Plan again = run_planner("vpipe", x.req);
  EXPECT_EQ(s1 - s0, 2);
  EXPECT_EQ(vpipe_work().pipedream_seeds, s1);
  EXPECT_EQ(choice_of(again), choice_of(first));
}
