// The trainer's device cache plan (core/nas/device_cache_plan.h): hand-worked
// loads and victims, the hold rule that keeps a victim in use, and the
// simulator following the plan with counts that do not depend on timing.
#include <gtest/gtest.h>

#include "core/nas/cache_prediction.h"
#include "core/nas/device_cache_plan.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

namespace {
// One unit-size candidate per step (key = the letter), state and transfer 1.
std::vector<std::vector<CacheItem>> single(const std::vector<std::int64_t>& keys) {
  std::vector<std::vector<CacheItem>> out;
  for (auto k : keys) out.push_back({{k, 1, 1}});
  return out;
}
}  // namespace

TEST(DeviceCachePlan, ThreeCandidatesBudgetTwoWorkedByHand) {
  // A B C A B, room for two. Belady: load A, load B; C evicts B (next use
  // step 4; A's is step 3); A hits; B: A and C are never used again, the
  // tie goes to the least recently used, C (step 2; A was used at step 3).
  // 4 loads, 1 hit, evictions B then C.
  enum : std::int64_t { A = 1, B = 2, C = 3 };
  auto plan = plan_device_cache(single({A, B, C, A, B}), 2, Eviction::Belady);
  ASSERT_EQ(plan.steps.size(), 5u);
  EXPECT_EQ(plan.uses, 5u);
  EXPECT_EQ(plan.loads, 4u);
  EXPECT_EQ(plan.hits, 1u);
  EXPECT_EQ(plan.evictions, 2u);
  EXPECT_EQ(plan.load_bytes, 4);
  EXPECT_EQ(plan.peak_bytes, 2);
  EXPECT_TRUE(plan.steps[0].evict.empty());
  EXPECT_TRUE(plan.steps[1].evict.empty());
  EXPECT_EQ(plan.steps[2].evict, std::vector<std::int64_t>{B});
  EXPECT_TRUE(plan.steps[3].load.empty());
  EXPECT_EQ(plan.steps[3].hits, 1u);
  EXPECT_EQ(plan.steps[4].evict, std::vector<std::int64_t>{C});
  ASSERT_EQ(plan.steps[4].load.size(), 1u);
  EXPECT_EQ(plan.steps[4].load[0].key, B);

  // LRU on the same string: C evicts A, A evicts B, B evicts C: 5 loads.
  auto lru = plan_device_cache(single({A, B, C, A, B}), 2, Eviction::Lru);
  EXPECT_EQ(lru.loads, 5u);
  EXPECT_EQ(lru.hits, 0u);
  EXPECT_EQ(lru.steps[2].evict, std::vector<std::int64_t>{A});
}

TEST(DeviceCachePlan, ReferenceStringWithRoomForThree) {
  // The textbook string (also in test_nas_eviction): OPT loads 7, LRU 10.
  auto seq = single({1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5});
  EXPECT_EQ(plan_device_cache(seq, 3, Eviction::Belady).loads, 7u);
  EXPECT_EQ(plan_device_cache(seq, 3, Eviction::Lru).loads, 10u);
}

TEST(DeviceCachePlan, SizesStatelessCandidatesAndTheCapacity) {
  // Step 0 uses a 3-byte and a stateless (identity) candidate; step 1 a
  // 2-byte one; room for 4 bytes: step 1 must evict the 3-byte one.
  std::vector<std::vector<CacheItem>> steps = {{{10, 3, 2}, {11, 0, 0}}, {{12, 2, 1}, {11, 0, 0}}, {{10, 3, 2}}};
  auto plan = plan_device_cache(steps, 4, Eviction::Belady);
  EXPECT_EQ(plan.uses, 3u);  // the identity is no use of the cache
  EXPECT_EQ(plan.loads, 3u);
  EXPECT_EQ(plan.load_bytes, 2 + 1 + 2);  // transfer bytes: weights + state, no gradients
  EXPECT_EQ(plan.peak_bytes, 3);
  EXPECT_EQ(plan.steps[1].evict, std::vector<std::int64_t>{10});
  EXPECT_EQ(plan.steps[2].evict, std::vector<std::int64_t>{12});
  // One subnet larger than the cache cannot run.
  EXPECT_THROW(plan_device_cache(steps, 2, Eviction::Belady), std::invalid_argument);
}

TEST(DeviceCacheSchedule, AVictimInUseHoldsTheStepUntilItsUpdate) {
  enum : std::int64_t { A = 1, B = 2, C = 3 };
  auto plan = plan_device_cache(single({A, B, C, A, B}), 2, Eviction::Belady);
  CacheSchedule sched(&plan, 8);
  ASSERT_NE(sched.advance(), nullptr);  // step 0: A
  ASSERT_NE(sched.advance(), nullptr);  // step 1: B
  EXPECT_TRUE(sched.ready(1));
  EXPECT_FALSE(sched.ready(2));
  // Step 2 evicts B, held by subnet 1 (executed, not updated): it waits.
  EXPECT_TRUE(sched.blocked_by_held());
  EXPECT_EQ(sched.advance(), nullptr);
  sched.started(0);
  sched.started(1);
  sched.released(0);  // A's user done: not the victim
  EXPECT_EQ(sched.advance(), nullptr);
  sched.released(1);
  const CacheStep* s2 = sched.advance();
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(s2->evict, std::vector<std::int64_t>{B});
  EXPECT_TRUE(sched.ready(2));

  // The lookahead bounds prefetching past the oldest unstarted subnet.
  CacheSchedule near(&plan, 1);
  ASSERT_NE(near.advance(), nullptr);
  EXPECT_EQ(near.advance(), nullptr);  // subnet 0 not started: one step ahead at most
  near.started(0);
  EXPECT_NE(near.advance(), nullptr);
}

TEST(DeviceCachePlan, SimulatorFollowsThePlanWhateverTheTiming) {
  // A CSP job with several subnets in flight and a budget of a third of
  // each stage's slice: the planned simulation's loads, hits and bytes are
  // the plan's, per stage, and do not move when every action's duration
  // changes (the plan knows no time); the stalls do.
  const int n = 200;
  auto doc = csptest::uniform_supernet_json(2, 4, 4, n, 8);
  doc["search_space"]["param_mb"] = 1;
  doc["search_space"]["device_budget_gb"] = (2 * 4 * 2.0 / 3) / 1024;  // a third of 2 layers x 4 x 2 MiB
  NasJob nj = prepare_nas_job(pw::parse_job(doc));
  auto p = predict_device_cache(nj);
  EXPECT_EQ(p.cache_model, "planned");
  ASSERT_EQ(p.stages.size(), 2u);
  std::uint64_t evicted = 0;
  for (int s = 0; s < 2; ++s) {
    auto plan = plan_device_cache(stage_cache_steps(nj.space, nj.sequence, nj.stages[s]),
                                  static_cast<std::int64_t>(p.budget_bytes), Eviction::Belady);
    EXPECT_EQ(p.stages[s].uses, plan.uses) << s;
    EXPECT_EQ(p.stages[s].hits, plan.hits) << s;
    EXPECT_EQ(p.stages[s].loads, plan.loads) << s;
    EXPECT_EQ(p.stages[s].evictions, plan.evictions) << s;
    EXPECT_DOUBLE_EQ(p.stages[s].load_bytes, static_cast<double>(plan.load_bytes)) << s;
    EXPECT_EQ(plan.uses, static_cast<std::uint64_t>(2 * n));
    evicted += plan.evictions;
  }
  EXPECT_GT(evicted, 100u);  // the budget really forces evictions

  auto slow = doc;
  slow["search_space"]["fwd_ms"] = 3.0;
  slow["search_space"]["bwd_ms"] = 0.5;
  auto q = predict_device_cache(prepare_nas_job(pw::parse_job(slow)));
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(q.stages[s].loads, p.stages[s].loads) << s;
    EXPECT_EQ(q.stages[s].hits, p.stages[s].hits) << s;
  }
  EXPECT_NE(q.total().stall_ms, p.total().stall_ms);
}
