#include <gtest/gtest.h>

#include "core/replan/migration_plan.h"
#include "core/replan/replan_trigger.h"

using namespace pw;

namespace {
std::vector<StageObservation> stages(std::vector<double> ms) {
  std::vector<StageObservation> v;
  for (double m : ms) v.push_back({m, 0, 100});
  return v;
}
}  // namespace

TEST(ReplanTrigger, FiresOnSustainedImbalanceOnly) {
  ReplanTrigger t({0.15, 0.05, 2, 0.95, 5, 0.05});
  EXPECT_FALSE(t.observe(10, stages({10, 10, 10, 10})));
  EXPECT_FALSE(t.observe(11, stages({10, 10, 20, 10})));  // armed, 1 of 2
  auto d = t.observe(12, stages({10, 10, 20, 10}));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, ReplanReason::Imbalance);
  EXPECT_NE(d->detail.find("stage 2"), std::string::npos);
}

TEST(ReplanTrigger, HysteresisAndCooldownPreventOscillation) {
  ReplanTrigger t({0.15, 0.05, 1, 0.95, 5, 0.05});
  ASSERT_TRUE(t.observe(1, stages({10, 20})));
  t.replanned(1);
  EXPECT_FALSE(t.observe(3, stages({10, 20})));  // cooling down
  // Between release and threshold after re-arming: stays quiet.
  EXPECT_FALSE(t.observe(10, stages({10, 11})));
  EXPECT_TRUE(t.observe(11, stages({10, 14})));   // 1.17x mean: above threshold
  t.replanned(11);
  EXPECT_FALSE(t.observe(20, stages({10, 11.5})));  // 7% imbalance: below threshold, not re-armed
}

TEST(ReplanTrigger, MemoryPressureAndManualFireAtOnce) {
  ReplanTrigger t;
  std::vector<StageObservation> s = {{10, 96, 100}, {10, 10, 100}};
  auto d = t.observe(100, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, ReplanReason::MemoryPressure);
  t.replanned(100);
  t.request_manual();
  d = t.observe(101, stages({10, 10}));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, ReplanReason::Manual);
  EXPECT_TRUE(t.worth_it(100, 106));
  EXPECT_FALSE(t.worth_it(100, 104));
}

TEST(ReplanTrigger, ObservedSlowdownIsMeasuredOverPredicted) {
  auto f = observed_slowdown({10, 10, 5}, stages({10, 25, 5}));
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 2.5);
  EXPECT_DOUBLE_EQ(f[2], 1.0);
}

TEST(MigrationPlan, MovesOnlyLayersWhoseOwnerChanges) {
  ModelProfile prof;
  for (int i = 0; i < 8; ++i) {
    LayerProfile l;
    l.param_bytes = 100 * (i + 1);
    l.optimizer_bytes = 10;
    prof.layers.push_back(l);
  }
  Plan a = uniform_partition(8, 2);  // [0-3][4-7]
  Plan b = a;
  b.stages = {{0, 1}, {2, 7}};
  auto moves = migration_moves(a, b, prof, {2, 1});
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].layer, 2);
  EXPECT_EQ(moves[0].from_stage, 0);
  EXPECT_EQ(moves[0].to_stage, 1);
  EXPECT_EQ(moves[0].bytes, 2u * 300 + 10);  // two stashed versions + optimizer state
  EXPECT_EQ(migration_bytes(moves), 2u * 300 + 10 + 2u * 400 + 10);
  EXPECT_TRUE(migration_moves(a, a, prof).empty());
}
