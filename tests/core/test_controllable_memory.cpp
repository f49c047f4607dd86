// V-Half and V-Min (issue 43; Qi et al., NeurIPS'24): V orders built from
// the paper's blocks (or the greedy where it is shorter) within the family's
// memory, runnable, fixed per shape, with the paper's bubbles; and the
// generator's V under the tightest limit any V order meets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "core/schedule/controllable_memory.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/v_building_block.h"
#include "core/schedule/zero_bubble.h"

namespace pw {
namespace {

OrderProblem unit_v(int p, int m) {
  OrderProblem pr = default_order_problem(p, m, 2);
  pr.memory_limit.clear();
  return pr;
}

TEST(ControllableMemory, HoldTheirFamilysMemoryAndRun) {
  for (int p : {2, 4, 8, 16})
    for (int m : {1, p, 2 * p, 4 * p}) {
      const OrderProblem pr = unit_v(p, m);
      for (auto [name, make, units] :
           {std::tuple{"v-half", &make_v_half, v_half_units(p, m)}, std::tuple{"v-min", &make_v_min, v_min_units(p, m)}}) {
        const std::string at = std::string(name) + " p" + std::to_string(p) + " m" + std::to_string(m);
        auto s = make(p, m);
        EXPECT_TRUE(s->splits_backward()) << at;
        EXPECT_EQ(s->chunks(), 2) << at;
        EXPECT_EQ(s->device_of_virtual_stage(2 * p - 1), 0) << at;  // the V
        const auto order = order_of(*s);
        EXPECT_EQ(check_order(pr, order), "") << at;
        const OrderTiming t = time_orders(pr, order);
        for (int d = 0; d < p; ++d) {
          // B frees nothing here: a microbatch holds its unit until W.
          EXPECT_LE(t.peak_memory[d], units + 1e-9) << at << " device " << d;
          EXPECT_LE(s->in_flight(d), units + 1e-9) << at << " device " << d;
        }
        // Fixed per shape: the same order again.
        EXPECT_EQ(order_to_text(order_of(*make(p, m))[0]), order_to_text(order[0])) << at;
      }
      // The paper's levels in chunk units (two per device microbatch):
      // V-Half (p+2)/2 and V-Min (p+4)/3 device microbatches, at most 2m.
      EXPECT_DOUBLE_EQ(v_half_units(p, m), std::min(2.0 * m, p + 2.0));
      EXPECT_DOUBLE_EQ(v_min_units(p, m), std::max(2.0, std::min(2.0 * m, std::floor(2.0 * (p + 4) / 3))));
    }
}

// What a device holds at worst, counted by walking its order by hand (F of
// either chunk adds a chunk unit, W frees it, B frees nothing: the paper's
// count), independently of time_orders.
double hand_counted_peak(const std::vector<Action>& device_order) {
  int held = 0, peak = 0;
  for (const Action& a : device_order) {
    if (a.kind == ActionKind::Forward) ++held;
    if (a.kind == ActionKind::BackwardWeight) --held;
    peak = std::max(peak, held);
  }
  return peak;
}

// The paper's levels in chunk units (two per device microbatch): V-Half
// (p+2)/2 and V-Min (p+4)/3 device microbatches, never more than all m.
double half_level(int p, int m) { return std::min(2.0 * m, 2.0 * (p + 2) / 2); }
double min_level(int p, int m) { return std::max(2.0, std::min(2.0 * m, 2.0 * (p + 4) / 3)); }

// Less memory, no shorter: at unit costs (a chunk's F, B, W 0.5 each, a
// device's work 3 per microbatch) and m = 4p, ZB-V (1x) <= V-Half <= V-Min
// in window. Each bubble (window - 3m) against the paper: its closed forms,
// bubble rates ~p/2m (V-Half) and ~2p/3m (V-Min) of the work, so 1.5p and
// 2p here; and what the authors' own generator
// (sail-sg/zero-bubble-pipeline-parallelism, scheduler/zbv_greedy.py, run at
// F = B = W = 1 and halved) gives for these shapes: V-Half 2.5, 8.5, 20.5 and
// V-Min 5.5, 13.5, 29.5 at p = 4, 8, 16. No tolerance above either (1e-9 is
// the noise of sums of halves): the closed forms are the paper's estimates
// from the block's lifespan, which its reordered warm-up and cool-down beat
// at these p (the orders land 2.5 to 3.5 under them; the block merely
// repeated does not: 27.0 for V-Half at p = 16), and our block is the
// authors' construction, so ours can only tie theirs or be a shorter
// greedy order (V-Min at p = 4: 5.0).
TEST(ControllableMemory, BubblesMatchThePapersBuildingBlocks) {
  const std::map<int, std::pair<double, double>> authors = {{4, {2.5, 5.5}}, {8, {8.5, 13.5}}, {16, {20.5, 29.5}}};
  for (int p : {4, 8, 16}) {
    const int m = 4 * p;
    OrderProblem pr = unit_v(p, m);
    pr.stages.assign(2 * p, ActionTimes{0.5, 0.5, 0.5});
    const double work = 3.0 * m;
    const double zbv = time_orders(pr, order_of(*make_zb_v(p, m))).window;
    const double half = time_orders(pr, order_of(*make_v_half(p, m))).window;
    const double min = time_orders(pr, order_of(*make_v_min(p, m))).window;
    EXPECT_LE(zbv, half + 1e-9) << p;
    EXPECT_LE(half, min + 1e-9) << p;
    std::printf("p %d m %d: bubble zb-v %.1f, v-half %.1f (paper ~%.1f, authors' code %.1f), "
                "v-min %.1f (paper ~%.1f, %.1f)\n",
                p, m, zbv - work, half - work, work * p / (2.0 * m), authors.at(p).first, min - work,
                work * 2 * p / (3.0 * m), authors.at(p).second);
    EXPECT_LE(half - work, work * p / (2.0 * m) + 1e-9) << p;
    EXPECT_LE(min - work, work * 2 * p / (3.0 * m) + 1e-9) << p;
    EXPECT_LE(half - work, authors.at(p).first + 1e-9) << p;
    EXPECT_LE(min - work, authors.at(p).second + 1e-9) << p;
  }
}

// The block orders alone, at every p 2-16 and m 1-64 (reordered and as
// repeated): each a valid V order (check_order) within the family's level
// by hand count, and the same again when rebuilt.
TEST(ControllableMemory, BlockOrdersAreValidAndWithinTheirLevelForEveryShape) {
  for (int p = 2; p <= 16; ++p)
    for (int m = 1; m <= 64; ++m) {
      const OrderProblem pr = unit_v(p, m);
      for (auto [block, level] : {std::pair{VBlock::Half, half_level(p, m)}, std::pair{VBlock::Min, min_level(p, m)}})
        for (bool reorder : {true, false}) {
          const std::string at = std::string(block == VBlock::Half ? "half" : "min") + (reorder ? " reordered" : "") +
                                 " p" + std::to_string(p) + " m" + std::to_string(m);
          const auto order = v_block_order(block, p, m, reorder);
          ASSERT_EQ(order.size(), static_cast<std::size_t>(p)) << at;  // the block applies at every p >= 2
          ASSERT_EQ(check_order(pr, order), "") << at;
          for (int d = 0; d < p; ++d) EXPECT_LE(hand_counted_peak(order[d]), level + 1e-9) << at << " device " << d;
          if (m % 16 == 0)
            EXPECT_EQ(order_to_text(v_block_order(block, p, m, reorder)[p - 1]), order_to_text(order[p - 1])) << at;
        }
    }
}

// What v-half and v-min run (the better of block and greedy) across shapes:
// valid, within the paper's level by hand count. m 1-8 where the greedy
// usually wins, and p, 2p + 1, 4p and 64 where the block does (every m
// 1-64 would time the greedy's variants 1920 times: a minute).
TEST(ControllableMemory, ChosenOrdersAreValidAndWithinTheLevelByHandCount) {
  for (int p = 2; p <= 16; ++p) {
    std::set<int> ms = {p, 2 * p + 1, 4 * p, 64};
    for (int m = 1; m <= 8; ++m) ms.insert(m);
    for (int m : ms) {
      const OrderProblem pr = unit_v(p, m);
      for (auto [name, make, level] : {std::tuple{"v-half", &make_v_half, half_level(p, m)},
                                       std::tuple{"v-min", &make_v_min, min_level(p, m)}}) {
        const std::string at = std::string(name) + " p" + std::to_string(p) + " m" + std::to_string(m);
        const auto order = order_of(*make(p, m));
        ASSERT_EQ(check_order(pr, order), "") << at;
        for (int d = 0; d < p; ++d) EXPECT_LE(hand_counted_peak(order[d]), level + 1e-9) << at << " device " << d;
      }
    }
  }
}

// A V at the least any V order holds (one microbatch per chunk): the
// generator's heuristic keeps room for chunk 1 and finishes.
TEST(ControllableMemory, GeneratedVRunsAtTheTightestLimit) {
  for (int p : {2, 4, 8}) {
    OrderProblem pr = default_order_problem(p, 3 * p, 2);
    pr.memory_limit.assign(p, 2.0);
    const GeneratedOrder g = generate_order(pr, 100'000);
    EXPECT_TRUE(g.timing.complete);
    for (double x : g.timing.peak_memory) EXPECT_LE(x, 2.0 + 1e-9) << p;
  }
}

}  // namespace
}  // namespace pw
