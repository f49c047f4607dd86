// Generated orders (issue 28) against each hand-built order and 1F1B, at
// the same memory: p = 4, 8, 16, m = 1..4p, unit and unequal costs, memory
// limits of 1F1B's busiest device and twice it. Iterations are timed by
// time_orders (the generator's model: F, B, W per stage, transfer as
// latency) and cost their longest device window, the objective the
// generator minimises (issue 43); a hand-built order counts at a limit only
// where it fits.
#include "zero_bubble_generated.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/schedule.h"
#include "core/schedule/zero_bubble.h"

namespace pw::bench {
namespace {

// Unit: F = B = W = 1, no transfer. Unequal: the F:B:W = 1:1.1:0.9
// with a 0.1 transfer, and stages differing (every third stage's forward
// 40% slower, odd stages' B 20% slower), as a planner's partition leaves them.
std::vector<ActionTimes> costs(int stages, bool unequal, double chunk_scale) {
  std::vector<ActionTimes> c(stages);
  for (int j = 0; j < stages; ++j) {
    c[j] = unequal ? ActionTimes{1.0 + 0.4 * (j % 3 == 0), 1.1 + 0.22 * (j % 2), 0.9} : ActionTimes{1, 1, 1};
    c[j].f *= chunk_scale, c[j].b *= chunk_scale, c[j].w *= chunk_scale;
  }
  return c;
}

struct Ratio {  // generated window / other window over the m's where the other fits
  double worst = 0, best = 1e9, sum = 0;
  int n = 0;
  void add(double r) { worst = std::max(worst, r), best = std::min(best, r), sum += r, ++n; }
  std::string cell() const {
    if (n == 0) return "does not fit";
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f / %.3f (%d)", worst, best, n);
    return buf;
  }
};

void one_chunk_table() {
  std::printf("generated vs hand-built, one stage per device: generated window / other window, worst / best over m = 1..4p\n");
  std::printf("(number of m where the other fits the limit); <= 1.000 = generated never slower\n");
  std::printf("  %3s %-8s %-9s %-24s %-24s %-24s %-24s %9s\n", "p", "costs", "limit", "vs 1f1b", "vs zb-h1", "vs zb-h2",
              "vs 1f1b (mean)", "gen ms/m");
  for (int p : quick_or(std::vector<int>{4}, std::vector<int>{4, 8, 16}))
    for (bool unequal : {false, true})
      for (int scale : {1, 2}) {
        Ratio r1, rh1, rh2;
        double gen_ms = 0;
        int ms = 0;
        for (int m = 1; m <= 4 * p; m += quick_or(p, 1)) {
          OrderProblem pr;
          pr.devices = p, pr.microbatches = m;
          pr.stages = costs(p, unequal, 1);
          pr.transfer = unequal ? 0.1 : 0;
          pr.memory_limit.assign(p, scale * std::min(m, p));
          auto t0 = std::chrono::steady_clock::now();
          GeneratedOrder g = generate_order(pr);
          gen_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          ++ms;
          const double span = g.timing.window;
          auto against = [&](Ratio& r, std::unique_ptr<Schedule> s) {
            OrderTiming t = time_orders(pr, order_of(*s));
            if (t.complete && within_memory(pr, t)) r.add(span / t.window);
          };
          against(r1, make_schedule(ScheduleKind::OneFOneB, p, m, 1));
          against(rh1, make_zb_h1(p, m));
          against(rh2, make_zb_h2(p, m));
        }
        char mean[32];
        std::snprintf(mean, sizeof mean, "%+.1f%% faster", r1.n ? (1 - r1.sum / r1.n) * 100 : 0.0);
        std::printf("  %3d %-8s %-9s %-24s %-24s %-24s %-24s %9.2f\n", p, unequal ? "unequal" : "unit",
                    scale == 1 ? "1f1b" : "2x 1f1b", r1.cell().c_str(), rh1.cell().c_str(), rh2.cell().c_str(), mean,
                    gen_ms / ms);
      }
  std::printf("\n");
}

// V placement: chunk costs halved (a chunk is half a stage), limit = ZB-V's
// peak (what default_order_problem uses) and twice it.
void v_table() {
  std::printf("generated V vs ZB-V and DualPipeV, chunk costs half a stage's, limit ZB-V's peak (chunk units)\n");
  std::printf("  %3s %-8s %-9s %-24s %-24s %s\n", "p", "costs", "limit", "vs zb-v", "vs dualpipe-v", "p=m case: zb-v -> generated");
  for (int p : quick_or(std::vector<int>{4}, std::vector<int>{4, 8, 16}))
    for (bool unequal : {false, true})
      for (int scale : {1, 2}) {
        Ratio rv, rd;
        std::string pm;
        for (int m = 1; m <= 4 * p; m += quick_or(p, 1)) {
          OrderProblem pr = default_order_problem(p, m, 2);
          pr.stages = costs(2 * p, unequal, 0.5);
          pr.transfer = unequal ? 0.1 : 0;
          for (double& l : pr.memory_limit) l *= scale;
          GeneratedOrder g = generate_order(pr);
          auto against = [&](Ratio& r, std::unique_ptr<Schedule> s) -> double {
            OrderTiming t = time_orders(pr, order_of(*s));
            if (!t.complete || !within_memory(pr, t)) return -1;
            r.add(g.timing.window / t.window);
            return t.window;
          };
          double zv = against(rv, make_zb_v(p, m));
          if (m >= 2 * p) against(rd, make_dualpipe_v(p, m));
          if (m == p) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.2f -> %.2f", zv, g.timing.window);
            pm = buf;
          }
        }
        std::printf("  %3d %-8s %-9s %-24s %-24s %s\n", p, unequal ? "unequal" : "unit", scale == 1 ? "zb-v" : "2x zb-v",
                    rv.cell().c_str(), rd.cell().c_str(), pm.c_str());
      }
  std::printf("\n");
}

}  // namespace

void generated_orders() {
  one_chunk_table();
  v_table();
}

}  // namespace pw::bench
