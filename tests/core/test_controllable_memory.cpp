// V-Half and V-Min (issue 43; Qi et al., NeurIPS'24): V orders within the
// family's memory, runnable, fixed per shape; and the generator's V under
// the tightest limit any V order meets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/schedule/controllable_memory.h"
#include "core/schedule/generated_order.h"
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

// Less memory, no shorter: at unit costs and m = 4p, ZB-V (1x) <= V-Half
// <= V-Min in window, each within its bubble's order of magnitude (the
// paper: ~0, ~p/2m and ~2p/3m of the work, m(F+B+W)).
TEST(ControllableMemory, LessMemoryCostsTime) {
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
    // Their bubbles against the paper's (p/2m and 2p/3m of the work): built
    // by the greedy rule, not the paper's blocks, they are behind at large p
    // (docs/schedules.md gives the figures this prints). Bounded at 2x.
    std::printf("p %d m %d: bubble zb-v %.1f, v-half %.1f (paper ~%.1f), v-min %.1f (paper ~%.1f)\n", p, m, zbv - work,
                half - work, work * p / (2.0 * m), min - work, work * 2 * p / (3.0 * m));
    EXPECT_LE(half - work, 2 * work * p / (2.0 * m)) << p;
    EXPECT_LE(min - work, 2 * work * 2 * p / (3.0 * m)) << p;
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
