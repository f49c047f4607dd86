// Issue 43's grid: p in {4, 8, 16}, m/p in {1, 2, 4, 8}, F:B:W of unit costs
// and of the repository's jobs, a transfer of 0, 10 and 20% of F, and a
// memory cap of 1/3, 1/2 and 1x of 1F1B's activations (min(m, p)
// microbatches per device; a V counts chunk microbatches, two per device
// microbatch). Per cell: the generated schedule (the better of the one-chunk
// order and the V, each generated under the cap) against the best of 1F1B,
// interleaved 1F1B (2 chunks), ZB-H1, ZB-H2, ZB-V, DualPipeV, V-Half and
// V-Min that fits the cap, every one timed alike: time_orders' ASAP start
// of each action (transfers as latency), an iteration costing its longest
// device window (IterationCost::Window, what the engine's back-to-back
// iterations cost). Then the summary and the generator's time at p = 16,
// m = 128 against one timing of ZB-V's order in the same process.
#include "zero_bubble_grid.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/cost/stage_cost.h"
#include "core/job/job_plan.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/schedule.h"
#include "core/schedule/zero_bubble.h"

namespace pw::bench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Costs {
  std::string name;
  double f = 1, b = 1, w = 1;
};

// F:B:W of a job's whole model as stage_cost splits it (keep everywhere),
// scaled to F = 1.
Costs job_costs(const std::string& name, const std::string& file) {
  JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/" + file);
  ModelProfile prof = job_profile(job);
  std::vector<MemoryPolicy> keep(prof.size(), MemoryPolicy::Keep);
  StageCost c = stage_cost(prof, StageRange{0, static_cast<int>(prof.size()) - 1}, keep);
  return {name, 1.0, c.bwd_input_ms / c.fwd_ms, c.bwd_weight_ms / c.fwd_ms};
}

// Interleaved 1F1B (Megatron) on v = 2 chunks: not a placement OrderProblem
// has (virtual stage j on device j mod p), so timed here the same way as
// time_orders: each action at the earliest its device and its input allow,
// a full backward taking B + W, every hop between devices `hop`. Returns the
// longest device window, or infinity where it does not fit `cap` chunk
// units (its in-flight count) or cannot run.
double interleaved_window(int p, int m, const Costs& c, double hop, double cap) {
  std::unique_ptr<Schedule> s;
  try {
    s = make_schedule(ScheduleKind::Interleaved, p, m, 2);
  } catch (const std::invalid_argument&) {
    return kInf;
  }
  for (int d = 0; d < p; ++d)
    if (s->in_flight(d) > cap + 1e-9) return kInf;
  const int V = 2 * p;
  const double f = c.f / 2, bw = (c.b + c.w) / 2;
  std::vector<double> fe(static_cast<size_t>(V) * m, -1), be(fe), free(p, 0), first(p, -1);
  std::vector<std::int64_t> cur(p, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int d = 0; d < p; ++d)
      while (cur[d] < s->length(d)) {
        Action a = s->action(d, cur[d]);
        if (a.kind == ActionKind::OptimizerStep) {
          ++cur[d];
          continue;
        }
        const int j = s->virtual_stage(d, a.chunk), mb = a.microbatch;
        double ready = 0;
        if (a.kind == ActionKind::Forward) {
          if (j > 0) {
            if (fe[(j - 1) * m + mb] < 0) break;
            ready = fe[(j - 1) * m + mb] + hop;
          }
        } else if (j + 1 < V) {
          if (be[(j + 1) * m + mb] < 0) break;
          ready = be[(j + 1) * m + mb] + hop;
        } else {
          if (fe[j * m + mb] < 0) break;
          ready = fe[j * m + mb];
        }
        const double start = std::max(free[d], ready);
        if (first[d] < 0) first[d] = start;
        free[d] = start + (a.kind == ActionKind::Forward ? f : bw);
        (a.kind == ActionKind::Forward ? fe : be)[j * m + mb] = free[d];
        ++cur[d];
        progress = true;
      }
  }
  double window = 0;
  for (int d = 0; d < p; ++d) {
    if (cur[d] < s->length(d)) return kInf;
    window = std::max(window, free[d] - first[d]);
  }
  return window;
}

OrderProblem problem(int p, int m, const Costs& c, double transfer, double cap_fraction, bool v) {
  OrderProblem pr;
  pr.devices = p;
  pr.microbatches = m;
  pr.v_shape = v;
  const double scale = v ? 0.5 : 1.0;  // a chunk is half a stage
  pr.stages.assign(pr.virtual_stages(), ActionTimes{c.f * scale, c.b * scale, c.w * scale});
  pr.transfer = transfer;
  // The cap: a fraction of 1F1B's min(m, p) device microbatches, in units.
  const double units = cap_fraction * std::min(m, p) * pr.chunks();
  pr.memory_limit.assign(p, std::max(units, static_cast<double>(pr.chunks())));
  pr.objective = IterationCost::Window;
  return pr;
}

struct Cell {
  double gen = kInf, best = kInf;
  std::string gen_source, best_name;
};

Cell run_cell(int p, int m, const Costs& c, double transfer, double cap, std::int64_t budget) {
  Cell cell;
  for (bool v : {false, true}) {
    OrderProblem pr = problem(p, m, c, transfer, cap, v);
    const double units = cap * std::min(m, p) * pr.chunks();
    // Hand-built orders that fit the cap itself (not the clamp to one
    // microbatch per chunk the generator needs).
    for (const auto& [name, order] : hand_built_orders(pr)) {
      OrderTiming t = time_orders(pr, order);
      bool fits = t.complete;
      for (double x : t.peak_memory) fits = fits && x <= units + 1e-9;
      if (fits && t.window < cell.best) cell.best = t.window, cell.best_name = name;
    }
    if (units + 1e-9 < pr.chunks()) continue;  // no order of this placement fits
    try {
      GeneratedOrder g = generate_order(pr, budget);
      if (g.timing.window < cell.gen) cell.gen = g.timing.window, cell.gen_source = (v ? "V " : "") + g.source;
    } catch (const std::runtime_error&) {
    }
  }
  const double il = interleaved_window(p, m, c, transfer, cap * std::min(m, p) * 2);
  if (il < cell.best) cell.best = il, cell.best_name = "interleaved";
  return cell;
}

void generator_time() {
  const int p = 16, m = 128;
  OrderProblem pr = problem(p, m, Costs{"unit"}, 0.1, 1.0, true);
  const auto zbv = order_of(*make_zb_v(p, m));
  auto t0 = std::chrono::steady_clock::now();
  const int reps = 20;
  double sink = 0;
  for (int i = 0; i < reps; ++i) sink += time_orders(pr, zbv).window;
  auto t1 = std::chrono::steady_clock::now();
  GeneratedOrder g = generate_order(pr);
  auto t2 = std::chrono::steady_clock::now();
  OrderProblem one = problem(p, m, Costs{"unit"}, 0.1, 1.0, false);
  GeneratedOrder g1 = generate_order(one);
  auto t3 = std::chrono::steady_clock::now();
  const double base = std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
  const double gv = std::chrono::duration<double, std::milli>(t2 - t1).count();
  const double g1ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
  std::printf("generator time, p = 16, m = 128, transfer 0.1 F, default search budget (10M timed actions):\n");
  std::printf("  V %.1f ms, one chunk %.1f ms (target < 1000 ms); one time_orders of ZB-V's order %.3f ms: x%.0f and x%.0f"
              " (windows %.2f, %.2f; %g)\n\n",
              gv, g1ms, base, gv / base, g1ms / base, g.timing.window, g1.timing.window, sink / reps);
}

}  // namespace

void generated_grid() {
  std::vector<Costs> costs{{"unit", 1, 1, 1}};
  if (!quick()) {
    costs.push_back(job_costs("bert24", "bert24-4gpu.json"));
    costs.push_back(job_costs("gpt32", "gpt32-8gpu.json"));
    costs.push_back(job_costs("trf12x12", "scenarios/vpipe-transformer12x12-8x11gb.json"));
  }
  const auto ps = quick_or(std::vector<int>{4}, std::vector<int>{4, 8, 16});
  const auto ratios = quick_or(std::vector<int>{1, 2}, std::vector<int>{1, 2, 4, 8});
  const std::vector<double> transfers = quick_or(std::vector<double>{0, 0.2}, std::vector<double>{0, 0.1, 0.2});
  // 1/3, 1/2, 1 as the issue asks, and the levels V-Min and V-Half hold,
  // (p+4)/3 and (p+2)/2 of 1F1B's p: above 1/3 and 1/2 at these p, so at
  // 1/3 and 1/2 themselves no hand-built order fits and generated is alone.
  auto caps_of = [](int p) {
    return std::vector<std::pair<std::string, double>>{{"1/3", 1.0 / 3},
                                                       {"vmin", (p + 4) / (3.0 * p)},
                                                       {"1/2", 0.5},
                                                       {"vhalf", (p + 2) / (2.0 * p)},
                                                       {"1", 1.0}};
  };
  const std::int64_t budget = quick_or<std::int64_t>(200'000, 2'000'000);
  std::printf("grid (issue 43): generated vs the best hand-built order that fits the same cap, iteration = the\n");
  std::printf("longest device window, in units of F (F:B:W per line; transfer as a share of F)\n");
  std::printf("(cap: of 1F1B's activations; vmin = (p+4)/3p and vhalf = (p+2)/2p, what V-Min and V-Half hold)\n");
  std::printf("  %3s %4s %-9s %5s %5s %9s %9s %7s  %-14s %s\n", "p", "m", "F:B:W", "xfer", "cap", "generated",
              "best hand", "gain", "best hand-built", "generated from");
  int cells = 0, slower = 0, faster5 = 0, no_hand = 0, no_gen = 0;
  // Where it ties: the compared cells and those >= 5% faster per cap and
  // transfer and per m/p, and the ties whose generated order is the best
  // hand-built order itself (the generator's winner is that family, local
  // search found nothing).
  struct Count {
    int compared = 0, faster = 0, kept_hand = 0;
  };
  std::map<std::string, Count> by_cap, by_ratio;
  double worst = kInf, best_gain = -kInf;
  std::string worst_at;
  for (const Costs& c : costs)
    for (int p : ps)
      for (int r : ratios)
        for (double x : transfers)
          for (const auto& [cap_name, cap] : caps_of(p)) {
            const int m = r * p;
            Cell cell = run_cell(p, m, c, x * c.f, cap, budget);
            char fbw[32];
            std::snprintf(fbw, sizeof fbw, "%.2g:%.2g:%.2g", c.f, c.b, c.w);
            ++cells;
            if (cell.gen == kInf) ++no_gen;
            if (cell.best == kInf) {
              ++no_hand;
              std::printf("  %3d %4d %-9s %4.0f%% %5s %9.2f %9s %7s  %-14s %s\n", p, m, fbw, x * 100, cap_name.c_str(),
                          cell.gen, "none fits", "-", "-", cell.gen_source.c_str());
              continue;
            }
            const double gain = cell.best / cell.gen - 1;  // > 0: generated faster
            if (gain < -1e-9) ++slower;
            if (gain >= 0.05 - 1e-12) ++faster5;
            char xfer[16];
            std::snprintf(xfer, sizeof xfer, "%3.0f%%", x * 100);
            const bool kept = cell.gen_source == cell.best_name || cell.gen_source == "V " + cell.best_name;
            for (Count* k : {&by_cap[cap_name + " xfer " + xfer], &by_ratio["m/p " + std::to_string(r)]}) {
              ++k->compared;
              k->faster += gain >= 0.05 - 1e-12;
              k->kept_hand += kept;
            }
            if (gain < worst) worst = gain, worst_at = std::to_string(p) + " x " + std::to_string(m) + " " + fbw + " cap " + cap_name;
            best_gain = std::max(best_gain, gain);
            std::printf("  %3d %4d %-9s %4.0f%% %5s %9.2f %9.2f %+6.1f%%  %-14s %s\n", p, m, fbw, x * 100,
                        cap_name.c_str(), cell.gen, cell.best, gain * 100, cell.best_name.c_str(), cell.gen_source.c_str());
          }
  const int compared = cells - no_hand;
  std::printf("summary: %d cells, %d where no hand-built order fits the cap (generated runs in %d of those);\n", cells,
              no_hand, no_hand - no_gen);
  std::printf("  of the %d compared: slower in %d, >= 5%% faster in %d (%.0f%%), worst cell %+.2f%% (%s), best %+.1f%%\n\n",
              compared, slower, faster5, compared ? 100.0 * faster5 / compared : 0.0, worst * 100, worst_at.c_str(),
              best_gain * 100);
  std::printf("where it ties (compared, >= 5%% faster, generated = the best hand-built order itself):\n");
  for (const auto* group : {&by_cap, &by_ratio})
    for (const auto& [key, k] : *group)
      std::printf("  %-16s %4d %4d %4d\n", key.c_str(), k.compared, k.faster, k.kept_hand);
  std::printf("\n");
  generator_time();
}

}  // namespace pw::bench
