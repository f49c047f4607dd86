// Planner figures (issue 3): throughput of vpipe against gpipe, pipedream
// and uniform on the scenario jobs (simulated), the optimality gap against
// exact on random small instances, and planning times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/plan/planner.h"
#include "planner_instances.h"

using namespace pw;

namespace {

std::string ratio(const Plan& v, const Plan& b) {
  if (!b.feasible) return "  OOM  ";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+6.1f%%", (v.throughput_samples_per_s / b.throughput_samples_per_s - 1) * 100);
  return buf;
}

void scenarios() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PW_SOURCE_DIR) + "/resources/jobs/scenarios")) {
    std::string f = e.path().string();
    if (f.find(".profile.json") == std::string::npos && f.size() > 5 && f.substr(f.size() - 5) == ".json") files.push_back(f);
  }
  std::sort(files.begin(), files.end());
  std::printf("throughput of vpipe vs baselines, simulated (OOM = the baseline does not fit)\n");
  std::printf("  same schedule as the job (1F1B): vpipe vs gpipe / pipedream / uniform; native: gpipe on GPipe's\n");
  std::printf("  schedule, pipedream on its async 1F1B with weight stashing\n");
  std::printf("  %-34s %9s %8s %8s %8s %12s %12s\n", "scenario", "vpipe s/s", "gpipe", "pipedrm", "uniform",
              "gpipe(nat)", "pipedrm(nat)");
  for (const auto& f : files) {
    JobSpec job = load_job(f);
    ModelProfile prof = job_profile(job);
    PlanRequest req = plan_request(job, prof);
    Plan v = run_planner("vpipe", req);
    Plan g = run_planner("gpipe", req), p = run_planner("pipedream", req), u = run_planner("uniform", req);
    PlanRequest gn = req, pn = req;
    gn.schedule = ScheduleKind::GPipe;
    pn.schedule = ScheduleKind::AsyncOneFOneB;
    Plan gg = run_planner("gpipe", gn), pp = run_planner("pipedream", pn);
    std::printf("  %-34s %9.1f %8s %8s %8s %12s %12s\n", job.name.c_str(), v.throughput_samples_per_s,
                ratio(v, g).c_str(), ratio(v, p).c_str(), ratio(v, u).c_str(), ratio(v, gg).c_str(), ratio(v, pp).c_str());
  }
  std::printf("  (paper: +24.8%%..+291.3%% over GPipe, +61.4%%..+463.4%% over PipeDream)\n\n");
}

void gaps(ScheduleKind kind, int count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> g;
  int none = 0;
  double t_exact = 0, t_vpipe = 0;
  for (int i = 0; i < count; ++i) {
    auto x = plantest::random_gap_instance(rng, kind);
    Plan e = run_planner("exact", x.req), v = run_planner("vpipe", x.req);
    t_exact += e.planning_time_ms;
    t_vpipe += v.planning_time_ms;
    if (!e.feasible || !v.feasible) {
      ++none;
      continue;
    }
    g.push_back(v.iteration_time_ms / e.iteration_time_ms - 1);
  }
  std::sort(g.begin(), g.end());
  int over1 = static_cast<int>(std::count_if(g.begin(), g.end(), [](double x) { return x > 0.01; }));
  if (g.empty()) {
    std::printf("  %-10s no instance with a plan (%d tried)\n", to_string(kind).c_str(), count);
    return;
  }
  std::printf("  %-10s %3zu instances: median %.2f%%  p90 %.2f%%  worst %.2f%%  (>1%%: %d; no plan: %d)  "
              "planning exact %.2f ms, vpipe %.2f ms each\n",
              to_string(kind).c_str(), g.size(), g[g.size() / 2] * 100, g[g.size() * 9 / 10] * 100, g.back() * 100, over1,
              none, t_exact / count, t_vpipe / count);
}

void timing() {
  std::mt19937_64 rng(3);
  std::printf("planning time (random NAS-like layers, memory binding, 1F1B unless named)\n");
  using Size = std::tuple<int, int, int, double>;  // layers, stages, microbatches, target ms
  const auto sizes = bench::quick_or<std::vector<Size>>({{100, 8, 32, 20.0}, {300, 16, 64, 2000.0}},
                                                        {{100, 8, 32, 20.0}, {1000, 64, 128, 2000.0}});
  for (auto [L, p, m, target] : sizes) {
    auto x = plantest::random_instance(rng, L, p, m);
    Plan u = run_planner("uniform", x.req);
    Plan v = run_planner("vpipe", x.req);
    std::printf("  %4d layers x %2d stages: vpipe %8.2f ms (target < %.0f ms), %.3fx uniform's iteration time\n", L, p,
                v.planning_time_ms, target, v.iteration_time_ms / u.iteration_time_ms);
    if (L == 100) {
      // pipeline.schedule auto: every family planned; best of 3 runs each
      // (the box is shared, timings are noisy).
      PlanRequest ar = x.req;
      ar.auto_schedule = true;
      // CPU time too: on a loaded machine wall time mostly measures the load.
      double auto_ms = 1e300, one_ms = 1e300, auto_cpu = 0, one_cpu = 0;
      Plan a;
      const int reps = bench::quick_or(2, 5);
      for (int rep = 0; rep < reps; ++rep) {
        std::clock_t c0 = std::clock();
        a = run_planner("vpipe", ar);
        std::clock_t c1 = std::clock();
        double t1 = run_planner("vpipe", x.req).planning_time_ms;
        std::clock_t c2 = std::clock();
        auto_cpu += 1e3 * static_cast<double>(c1 - c0) / CLOCKS_PER_SEC / reps;
        one_cpu += 1e3 * static_cast<double>(c2 - c1) / CLOCKS_PER_SEC / reps;
        auto_ms = std::min(auto_ms, a.planning_time_ms);
        one_ms = std::min(one_ms, t1);
      }
      std::printf("    schedule auto: %.2f ms wall, best of %d (target < 50 ms), %.2fx the 1F1B-only plan's %.2f ms; "
                  "CPU %.2f ms = %.2fx 1F1B's %.2f ms; picks %s, %.3fx its iteration time\n",
                  auto_ms, reps, auto_ms / one_ms, one_ms, auto_cpu, auto_cpu / one_cpu, one_cpu, a.schedule.c_str(),
                  a.iteration_time_ms / v.iteration_time_ms);
    }
    ModelProfile changed = *x.profile;
    changed.layers[L / 3].fwd_ms *= 1.5;
    changed.layers[L / 3].bwd_ms *= 1.5;
    PlanRequest r = x.req;
    r.profile = &changed;
    r.current = &v;
    Plan inc = run_planner("vpipe", r);
    r.current = nullptr;
    Plan full = run_planner("vpipe", r);
    std::printf("    incremental replan after one layer changes: %.2f ms, %d layers moved, iteration %.4fx a full "
                "replan's (%.2f ms, %d layers moved)%s\n",
                inc.planning_time_ms, inc.layers_moved, inc.iteration_time_ms / full.iteration_time_ms,
                full.planning_time_ms, layers_moved(v, full), L == 100 ? " (target < 5 ms)" : "");
  }
}

}  // namespace

// Sections: scenarios, gaps, timing (all when none is named); schedule
// names (1f1b, zb-v, ...) restrict the gap table to those schedules.
int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto named = [&](const std::string& s) { return std::find(args.begin(), args.end(), s) != args.end(); };
  const bool all = !named("scenarios") && !named("gaps") && !named("timing");
  if (all || named("scenarios")) scenarios();
  if (all || named("gaps")) {
    std::printf("optimality gap of vpipe vs exact (simulated iteration time), random small instances\n");
    const std::pair<ScheduleKind, int> runs[] = {{ScheduleKind::OneFOneB, 200}, {ScheduleKind::GPipe, 100},
                                                 {ScheduleKind::AsyncOneFOneB, 100}, {ScheduleKind::ZBH1, 100},
                                                 {ScheduleKind::ZBH2, 100}, {ScheduleKind::ZBV, 100},
                                                 {ScheduleKind::DualPipeV, 100}};
    bool any_kind = false;
    for (auto [k, n] : runs) any_kind = any_kind || named(to_string(k));
    unsigned seed = 1;
    for (auto [k, n] : runs) {
      if (!any_kind || named(to_string(k))) gaps(k, bench::quick_or(10, n), seed);
      ++seed;
    }
    std::printf("\n");
  }
  if (all || named("timing")) timing();
  return 0;
}
