// Generated zero-bubble orders (issue 28): within 2% of a brute-force
// optimum on small instances, within each device's memory limit after
// every action, runnable under NCCL's matching (check_comm_order), never
// slower than a hand-built order that fits, and run by the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/schedule/comm_order.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/schedule.h"
#include "core/schedule/zero_bubble.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"
#include "order_timing.h"
#include "uniform_pipeline.h"

using namespace pw;

namespace {

// ---- An evaluator and an exhaustive search written apart from the
// generator (one chunk per device, stage d on device d). ----

struct Instance {
  int p = 2, m = 2;
  std::vector<double> f, b, w;  // per stage
  double transfer = 0;
  std::vector<double> limit;  // per device, units
  double release_b = 0;       // share of a unit B frees; W frees the rest
};

enum Kind { kF = 0, kB = 1, kW = 2 };

// Proves by exhaustive search that no per-device order (F, B and W each
// in microbatch order on every stage, any interleaving of the three that
// respects F before B before W of one microbatch and the memory limit)
// finishes before `target`. Orders are enumerated once each: actions are
// placed in order of (earliest start, device), each at the earliest time
// its order allows; a branch stops when its lower bound (a device's free
// time, or the last start, plus its remaining work) reaches the target.
// Returns the best makespan found below target, or target if none.
struct Search {
  const Instance& x;
  double best;
  std::vector<int> nf, nb, nw;
  std::vector<double> free, mem, rem;
  std::vector<std::vector<double>> fend, bend;
  long nodes = 0;
  std::vector<std::pair<int, int>> path, best_path;  // (device, kind) in placing order

  Search(const Instance& in, double target) : x(in), best(target) {
    nf.assign(x.p, 0), nb = nf, nw = nf;
    free.assign(x.p, 0), mem = free, rem = free;
    fend.assign(x.p, std::vector<double>(x.m, -1)), bend = fend;
    for (int d = 0; d < x.p; ++d) rem[d] = x.m * (x.f[d] + x.b[d] + x.w[d]);
  }

  // Earliest start of device d's next action of kind k, or -1 if its
  // dependencies are not placed yet or it is not allowed.
  double ready(int d, int k) const {
    if (k == kF) {
      if (nf[d] >= x.m || mem[d] + 1 > x.limit[d] + 1e-9) return -1;
      if (d == 0) return free[d];
      double e = fend[d - 1][nf[d]];
      return e < 0 ? -1 : std::max(free[d], e + x.transfer);
    }
    if (k == kB) {
      if (nb[d] >= nf[d]) return -1;
      double e = d + 1 < x.p ? bend[d + 1][nb[d]] : fend[d][nb[d]];
      if (e < 0) return -1;
      return std::max(free[d], e + (d + 1 < x.p ? x.transfer : 0));
    }
    if (nw[d] >= nb[d]) return -1;
    return free[d];
  }

  void dfs(double last_start, int last_dev, int placed) {
    ++nodes;
    if (placed == 3 * x.m * x.p) {
      double span = *std::max_element(free.begin(), free.end());
      if (span < best) best = span, best_path = path;
      return;
    }
    for (int d = 0; d < x.p; ++d)
      if (std::max(free[d], last_start) + rem[d] >= best - 1e-9) return;
    for (int d = 0; d < x.p; ++d)
      for (int k = kF; k <= kW; ++k) {
        double s = ready(d, k);
        if (s < 0) continue;
        if (s < last_start - 1e-9 || (std::abs(s - last_start) <= 1e-9 && d < last_dev)) continue;
        double dur = k == kF ? x.f[d] : k == kB ? x.b[d] : x.w[d];
        double old_free = free[d], old_mem = mem[d];
        free[d] = s + dur;
        rem[d] -= dur;
        if (k == kF) mem[d] += 1, fend[d][nf[d]++] = s + dur;
        if (k == kB) mem[d] -= x.release_b, bend[d][nb[d]++] = s + dur;
        if (k == kW) mem[d] -= 1 - x.release_b, ++nw[d];
        path.push_back({d, k});
        dfs(s, d, placed + 1);
        path.pop_back();
        if (k == kF) fend[d][--nf[d]] = -1;
        if (k == kB) bend[d][--nb[d]] = -1;
        if (k == kW) --nw[d];
        free[d] = old_free, mem[d] = old_mem;
        rem[d] += dur;
      }
  }
};

// Times a one-chunk order independently of time_orders: the same rules as
// Search (earliest start given the order).
test::OrderCosts costs_of(const Instance& x) {
  return {x.p, x.m, x.f, x.b, x.w, std::vector<double>(x.p, x.transfer), std::vector<double>(x.p, x.release_b)};
}
double span_of(const Instance& x, const std::vector<std::vector<Action>>& order) {
  return test::order_span(costs_of(x), order);
}

// Peak units held per device, counted along the order independently.
std::vector<double> peaks(const Instance& x, const std::vector<std::vector<Action>>& order) {
  return test::order_peaks(costs_of(x), order);
}

OrderProblem problem_of(const Instance& x) {
  OrderProblem pr;
  pr.devices = x.p;
  pr.microbatches = x.m;
  for (int d = 0; d < x.p; ++d) pr.stages.push_back({x.f[d], x.b[d], x.w[d]});
  pr.transfer = x.transfer;
  pr.memory_limit = x.limit;
  pr.released_at_b = x.release_b;
  return pr;
}

// Small instances: unit and unequal costs (stages differ, B > F > W and
// the reverse), with and without transfer, at 1F1B's memory and twice it,
// B releasing nothing or half.
std::vector<Instance> instances() {
  std::vector<Instance> out;
  struct Costs {
    std::vector<double> f, b, w;
  };
  const std::vector<Costs> costs = {
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {{1, 1.25, 0.75, 1}, {1.5, 1.25, 1, 1.5}, {0.5, 0.75, 1, 0.5}},
      {{1, 1, 1, 1}, {1.25, 1.25, 1.25, 1.25}, {0.75, 0.75, 0.75, 0.75}},
  };
  for (int p = 2; p <= 4; ++p)
    for (int m = 1; m <= 6; ++m)
      for (size_t c = 0; c < costs.size(); ++c)
        for (double tr : {0.0, 0.25})
          for (int mem_scale : {1, 2})
            for (double rel : {0.0, 0.5}) {
              // Keep the exhaustive search affordable: the larger shapes
              // at one setting each of the cheap knobs.
              if (p * m > 12 && (tr > 0 || rel > 0 || c == 2)) continue;
              if (p * m > 18 && c != 1) continue;
              if (p * m > 20) continue;
              Instance x;
              x.p = p, x.m = m, x.transfer = tr, x.release_b = rel;
              x.f.assign(costs[c].f.begin(), costs[c].f.begin() + p);
              x.b.assign(costs[c].b.begin(), costs[c].b.begin() + p);
              x.w.assign(costs[c].w.begin(), costs[c].w.begin() + p);
              x.limit.assign(p, mem_scale * std::min(m, p));
              out.push_back(x);
            }
  return out;
}

std::string describe(const Instance& x) {
  std::string s = "p=" + std::to_string(x.p) + " m=" + std::to_string(x.m) + " transfer=" +
                  std::to_string(x.transfer) + " limit=" + std::to_string(x.limit[0]) +
                  " release_b=" + std::to_string(x.release_b) + " F,B,W=";
  for (int d = 0; d < x.p; ++d)
    s += std::to_string(x.f[d]).substr(0, 4) + "/" + std::to_string(x.b[d]).substr(0, 4) + "/" +
         std::to_string(x.w[d]).substr(0, 4) + " ";
  return s;
}

}  // namespace

TEST(GeneratedOrder, WithinTwoPercentOfBruteForceOptimum) {
  int checked = 0;
  for (const Instance& x : instances()) {
    GeneratedOrder g = generate_order(problem_of(x));
    double ours = span_of(x, g.order);
    ASSERT_GT(ours, 0) << describe(x);
    EXPECT_NEAR(ours, g.timing.makespan, 1e-9) << describe(x);
    // No order finishes 2% sooner: search below ours / 1.02.
    Search s(x, ours / 1.02);
    auto t0 = std::chrono::steady_clock::now();
    s.dfs(0, 0, 0);
    // PW_DEBUG_SEARCH=1 prints each instance's search size (to keep the test quick).
    if (std::getenv("PW_DEBUG_SEARCH"))
      std::fprintf(stderr, "%s nodes %ld %.0f ms\n", describe(x).c_str(), s.nodes,
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::string found;
    for (int d = 0; d < x.p; ++d) {
      found += "\n  device " + std::to_string(d) + ":";
      for (auto [e, k] : s.best_path)
        if (e == d) found += k == kF ? " F" : k == kB ? " B" : " W";
    }
    EXPECT_GE(s.best, ours / 1.02 - 1e-9) << describe(x) << " brute force " << s.best << " ours " << ours << " ("
                                          << g.source << ")" << found;
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

// The search itself reaches a known optimum: unit costs, p = 2, m = 2 at
// 1F1B's memory. Device 1 has 6 units of work and gets its first input at
// 1, so nothing ends before 7; F0 F1 B0 W0 B1 W1 on device 0 and F0 B0 F1
// B1 W0 W1 on device 1 end at 7.
TEST(GeneratedOrder, BruteForceFindsTheOptimumOfAKnownCase) {
  Instance x;
  x.p = 2, x.m = 2;
  x.f = x.b = x.w = {1, 1};
  x.limit = {2, 2};
  Search all(x, 1e9);
  all.dfs(0, 0, 0);
  EXPECT_NEAR(all.best, 7, 1e-9);
  EXPECT_NEAR(span_of(x, generate_order(problem_of(x)).order), 7, 1e-9);
}

TEST(GeneratedOrder, MemoryLimitHeldAfterEveryAction) {
  for (int p : {2, 3, 4, 8})
    for (int m = 1; m <= 3 * p; ++m)
      for (double rel : {0.0, 0.5})
        for (double lim_per_dev : {1.0, 2.0, 0.5}) {
          Instance x;
          x.p = p, x.m = m, x.release_b = rel, x.transfer = 0.1;
          x.f.assign(p, 1), x.b.assign(p, 1.2), x.w.assign(p, 0.8);
          // Tight limits too: 1 unit (no pipelining), p/2, p, 2p.
          for (int d = 0; d < p; ++d) x.limit.push_back(std::max(1.0, std::round(lim_per_dev * p)));
          if (lim_per_dev == 0.5) x.limit.assign(p, 1.0);
          GeneratedOrder g = generate_order(problem_of(x));
          auto pk = peaks(x, g.order);
          for (int d = 0; d < p; ++d) EXPECT_LE(pk[d], x.limit[d] + 1e-9) << describe(x) << " device " << d;
          EXPECT_GT(span_of(x, g.order), 0) << describe(x);
        }
}

TEST(GeneratedOrder, EveryActionOnceAndCommOrderChecks) {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 2 * p + 2; ++m)
      for (int chunks : {1, 2}) {
        auto s = make_schedule(ScheduleKind::Generated, p, m, chunks);
        ASSERT_EQ(s->kind(), ScheduleKind::Generated);
        EXPECT_EQ(check_comm_order(*s, comm_order(*s)), "") << "p=" << p << " m=" << m << " chunks=" << chunks;
        for (int d = 0; d < p; ++d) {
          std::vector<int> count(3 * chunks * m, 0);
          for (std::int64_t i = 0; i + 1 < s->length(d); ++i) {
            Action a = s->action(d, i);
            int k = a.kind == ActionKind::Forward ? 0 : a.kind == ActionKind::BackwardInput ? 1 : 2;
            if (a.kind == ActionKind::Backward) {
              ++count[(1 * chunks + a.chunk) * m + a.microbatch];
              k = 2;
            }
            ++count[(k * chunks + a.chunk) * m + a.microbatch];
          }
          for (int c : count) EXPECT_EQ(c, 1) << "p=" << p << " m=" << m << " device " << d;
          EXPECT_EQ(s->action(d, s->length(d) - 1).kind, ActionKind::OptimizerStep);
        }
      }
  // Cost-aware orders too: unequal stages with transfer and partial release.
  for (int p : {2, 4, 8})
    for (int m : {1, p - 1, p, 2 * p + 1}) {
      if (m < 1) continue;
      Instance x;
      x.p = p, x.m = m, x.transfer = 0.1, x.release_b = 0.5;
      for (int d = 0; d < p; ++d) x.f.push_back(1 + 0.1 * d), x.b.push_back(1.3 - 0.05 * d), x.w.push_back(0.7);
      x.limit.assign(p, p);
      OrderProblem pr = problem_of(x);
      auto s = make_generated_schedule(pr, generate_order(pr));
      EXPECT_EQ(check_comm_order(*s, comm_order(*s)), "") << describe(x);
    }
}

// At the memory they need, every hand-built order is a candidate: the
// generated one is never slower (timed by the test's own evaluator).
TEST(GeneratedOrder, NeverSlowerThanAFittingHandBuiltOrder) {
  for (int p : {2, 4, 8})
    for (int m = 1; m <= 4 * p; m += (p > 4 ? 3 : 1))
      for (double tr : {0.0, 0.1}) {
        Instance x;
        x.p = p, x.m = m, x.transfer = tr;
        x.f.assign(p, 1), x.b.assign(p, 1.1), x.w.assign(p, 0.9);
        for (ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::ZBH1, ScheduleKind::ZBH2}) {
          auto hand = make_schedule(k, p, m, 1);
          std::vector<std::vector<Action>> ho(p);
          for (int d = 0; d < p; ++d)
            for (std::int64_t i = 0; i < hand->length(d); ++i) ho[d].push_back(hand->action(d, i));
          auto pk = peaks(x, ho);
          x.limit.assign(p, *std::max_element(pk.begin(), pk.end()));
          GeneratedOrder g = generate_order(problem_of(x));
          EXPECT_LE(span_of(x, g.order), span_of(x, ho) + 1e-9) << to_string(k) << " " << describe(x);
        }
      }
}

// ZB-V drops microbatches when m < 2p (issue 28: p = 8, m = 8 at unit
// costs takes 31 where the authors' generator takes 27.5); the generated V
// at ZB-V's memory does better there and never worse.
TEST(GeneratedOrder, VShapeBeatsZbVWithFewMicrobatches) {
  for (int p : {4, 8})
    for (int m : {p, p + 2, 2 * p, 3 * p}) {
      OrderProblem pr = default_order_problem(p, m, 2);
      for (auto& s : pr.stages) s = {0.5, 0.5, 0.5};  // a chunk is half a stage
      GeneratedOrder g = generate_order(pr);
      auto zbv = make_zb_v(p, m);
      std::vector<std::vector<Action>> zo(p);
      for (int d = 0; d < p; ++d)
        for (std::int64_t i = 0; i < zbv->length(d); ++i) zo[d].push_back(zbv->action(d, i));
      OrderTiming zt = time_orders(pr, zo);
      EXPECT_LE(g.timing.makespan, zt.makespan + 1e-9) << "p=" << p << " m=" << m;
      if (m == p && p == 8) {
        EXPECT_LT(g.timing.makespan, zt.makespan - 1) << g.source;
      }
    }
}

TEST(GeneratedOrder, RefusesBadProblems) {
  OrderProblem pr = default_order_problem(2, 2, 1);
  pr.memory_limit = {0.5, 2};
  EXPECT_THROW(generate_order(pr), std::invalid_argument);
  pr = default_order_problem(2, 2, 1);
  pr.stages[1].f = 0;
  EXPECT_THROW(generate_order(pr), std::invalid_argument);
  EXPECT_THROW(make_schedule(ScheduleKind::Generated, 2, 2, 3), std::invalid_argument);
}

// The simulator runs it (a split backward with W filling bubbles) and it is
// no slower than ZB-H1 at unit costs (where they coincide at 1F1B's memory).
TEST(GeneratedOrder, SimulatorRunsIt) {
  LayerProfile L;
  L.fwd_ms = 1;
  L.bwd_ms = 2;
  L.bwd_weight_ms = 1;
  L.activation_bytes = 1 << 20;
  for (int p : {2, 4})
    for (int m : {1, p, 3 * p}) {
      auto gen = pw::test::uniform_pipeline(ScheduleKind::Generated, p, m, 1, 1, L).run();
      auto h1 = pw::test::uniform_pipeline(ScheduleKind::ZBH1, p, m, 1, 1, L).run();
      EXPECT_TRUE(gen.feasible);
      EXPECT_LE(gen.iteration_time_ms, h1.iteration_time_ms * 1.001) << "p=" << p << " m=" << m;
    }
}

TEST(GeneratedOrder, JobSpecAcceptsGenerated) {
  auto choices = pipeline_schedule_choices();
  EXPECT_NE(std::find(choices.begin(), choices.end(), "generated"), choices.end());
  EXPECT_EQ(schedule_kind_from_string("generated"), ScheduleKind::Generated);
  auto doc = nlohmann::json::parse(R"({
    "name": "t",
    "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
    "training": {"batch_size": 16, "microbatch_size": 2},
    "cluster": {"devices": 4, "device": "v100-32g"},
    "pipeline": {"stages": 4, "schedule": "generated"}
  })");
  EXPECT_EQ(parse_job(doc).pipeline.schedule, ScheduleKind::Generated);
  // Two chunks: a V, as zb-v places them; more are refused.
  doc["pipeline"]["chunks"] = 2;
  EXPECT_EQ(parse_job(doc).pipeline.chunks, 2);
  doc["pipeline"]["chunks"] = 3;
  try {
    parse_job(doc);
    FAIL() << "accepted generated with 3 chunks";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline.chunks: schedule \"generated\" runs one chunk per device or two in a V, got 3");
  }
}

// The engine's runs of `generated` (tests/runtime/test_zero_bubble.cpp: 2
// stages x 4 microbatches, 4 x 4) execute an order no hand-built family
// has, so they check the engine on an order given as data.
TEST(GeneratedOrder, EngineTestShapesRunANewOrder) {
  for (auto [p, m] : {std::pair{2, 4}, std::pair{4, 4}}) {
    auto gen = make_schedule(ScheduleKind::Generated, p, m, 1);
    for (ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::ZBH1, ScheduleKind::ZBH2}) {
      auto hand = make_schedule(k, p, m, 1);
      bool same = true;
      for (int d = 0; d < p && same; ++d) {
        same = hand->length(d) == gen->length(d);
        for (std::int64_t i = 0; same && i < gen->length(d); ++i) {
          Action a = gen->action(d, i), b = hand->action(d, i);
          same = a.kind == b.kind && a.microbatch == b.microbatch;
        }
      }
      EXPECT_FALSE(same) << "p=" << p << " m=" << m << " equals " << to_string(k);
    }
  }
}
