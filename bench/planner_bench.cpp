// Planner figures (issue 3): throughput of vpipe against gpipe, pipedream
// and uniform on the scenario jobs (simulated), the optimality gap against
// exact on random small instances, and planning times.
#include <algorithm>
#include <functional>
#include <map>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/model/profile_retarget.h"
#include "core/plan/iteration_bound.h"
#include "core/plan/microbatch_search.h"
#include "core/plan/planner.h"
#include "core/spec/job_spec.h"
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
    pn.schedule = ScheduleKind::PipeDream;
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
    if (L == 100) {
      // pipeline.schedule generated: the partition chosen with each
      // candidate's own order (order_candidates, the default) against the
      // order adapted to the search's pick only (1). Wall time of the whole
      // run_planner (the orders are generated while evaluating), best of n.
      PlanRequest gr = x.req;
      gr.schedule = ScheduleKind::Generated;
      auto timed = [&](int candidates, Plan& out) {
        gr.order_candidates = candidates;
        double best = 1e300;
        for (int rep = 0; rep < bench::quick_or(2, 5); ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          out = run_planner("vpipe", gr);
          best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
      };
      Plan after, joint;
      const double after_ms = timed(1, after), joint_ms = timed(PlanRequest{}.order_candidates, joint);
      std::printf("    schedule generated: %.2f ms wall with the order in the partition choice (%d candidates), %.2f ms "
                  "adapting it after (%.2fx); iteration %.4fx the adapted-after plan's\n",
                  joint_ms, PlanRequest{}.order_candidates, after_ms, joint_ms / after_ms,
                  joint.iteration_time_ms / after.iteration_time_ms);
    }
    if (L == 100) {
      // microbatch_size auto over 6 sizes (batch 32 x m): every size planned
      // with its own costs (a fixed part of a fifth of each layer's time at
      // the instance's size), each with a sixth of vpipe's budget.
      ModelProfile base = *x.profile;
      base.microbatch_size = 8;
      for (auto& l : base.layers) l.fwd_fixed_ms = 0.2 * l.fwd_ms, l.bwd_fixed_ms = 0.2 * l.bwd_ms;
      JobSpec job;
      job.training.batch_size = 32 * m / 8;
      job.training.microbatch_size_auto = true;
      job.pipeline.stages = p;
      job.pipeline.schedule = ScheduleKind::OneFOneB;
      const std::size_t sizes = microbatch_candidates(job).size();
      // With the lower bound (sizes that cannot win are not planned) and
      // without it (every size planned): same choice, the time saved.
      auto search = [&](bool bounded, Plan& chosen) {
        double best = 1e300;
        for (int rep = 0; rep < bench::quick_or(2, 5); ++rep) {
          JobSpec j = job;
          std::map<int, ModelProfile> keep;
          auto request = [&](const JobSpec& at) {
            const int b = at.training.microbatch_size;
            auto it = keep.find(b);
            if (it == keep.end()) it = keep.emplace(b, rescale_microbatch(base, b)).first;
            PlanRequest r = x.req;
            r.profile = &it->second;
            r.microbatches = at.pipeline.microbatches;
            r.microbatch_size = b;
            r.search_effort = 1.0 / static_cast<double>(sizes);
            return r;
          };
          std::function<double(const JobSpec&)> bound;
          if (bounded) bound = [&](const JobSpec& at) { return iteration_lower_bound_ms(request(at)); };
          const auto t0 = std::chrono::steady_clock::now();
          chosen = search_microbatch(j, [&](const JobSpec& at) { return run_planner("vpipe", request(at)); }, bound);
          best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
      };
      Plan chosen, every;
      const double all_ms = search(false, every);
      const double best = search(true, chosen);
      int pruned = 0;
      for (const auto& row : chosen.microbatch_search) pruned += row.pruned;
      std::printf("    microbatch auto over %zu sizes: %.2f ms wall, best of %d (target < 50 ms), %.2fx planning every "
                  "size (%.2f ms; %d sizes not planned, bound slower); chose %d x %d%s\n",
                  sizes, best, bench::quick_or(2, 5), best / all_ms, all_ms, pruned, chosen.microbatch_size,
                  job.training.batch_size / chosen.microbatch_size,
                  chosen.microbatch_size == every.microbatch_size ? ", as planning every size does"
                                                                  : " (planning every size chose differently!)");
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

// vpipe against gpipe when each chooses its microbatch size (microbatch_size
// "auto", the analytic presets' fixed part per microbatch), beside the
// ratio at the job's fixed size: the scenario jobs, and bert24 on 4 cards
// of 11 / 8 / 6 / 4 GB.
void microbatch() {
  std::printf("vpipe vs gpipe, each with its best microbatch size (simulated; presets with a fixed part per microbatch)\n");
  std::printf("  %-34s %10s %14s %18s %14s\n", "job", "fixed b", "vpipe/gpipe", "auto: b vpipe, gpipe", "vpipe/gpipe");
  std::vector<std::pair<std::string, JobSpec>> jobs;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PW_SOURCE_DIR) + "/resources/jobs/scenarios")) {
    std::string f = e.path().string();
    if (f.find(".profile.json") == std::string::npos && f.size() > 5 && f.substr(f.size() - 5) == ".json")
      jobs.push_back({f, load_job(f)});
  }
  std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (double gb : {11.0, 8.0, 6.0, 4.0}) {
    JobSpec j = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/bert24-4gpu.json");
    j.cluster.device.memory_bytes = static_cast<std::uint64_t>(gb * 1024 * 1024 * 1024);
    j.name = "bert24 4 x " + std::to_string(static_cast<int>(gb)) + " GB";
    jobs.push_back({j.name, j});
  }
  if (bench::quick()) jobs.resize(std::min<std::size_t>(jobs.size(), 2));
  auto throughput = [](const Plan& p) { return p.feasible ? p.throughput_samples_per_s : 0.0; };
  auto cell = [](double v, double g) {
    char buf[32];
    if (g <= 0) return std::string("gpipe OOM");
    std::snprintf(buf, sizeof buf, "%.2fx", v / g);
    return std::string(buf);
  };
  for (auto& [name, job] : jobs) {
    const double vf = throughput(prepare_job(job, "vpipe").plan), gf = throughput(prepare_job(job, "gpipe").plan);
    JobSpec a = job;
    a.training.microbatch_size_auto = true;
    PreparedJob va = prepare_job(a, "vpipe"), ga = prepare_job(a, "gpipe");
    char bs[32];
    std::snprintf(bs, sizeof bs, "%d, %d", va.plan.microbatch_size, ga.plan.microbatch_size);
    std::printf("  %-34s %10d %14s %18s %14s\n", job.name.c_str(), job.training.microbatch_size, cell(vf, gf).c_str(), bs,
                cell(throughput(va.plan), throughput(ga.plan)).c_str());
  }
  std::printf("\n");
}

// Sections: scenarios, gaps, timing, microbatch (all when none is named); schedule
// names (1f1b, zb-v, ...) restrict the gap table to those schedules.
int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto named = [&](const std::string& s) { return std::find(args.begin(), args.end(), s) != args.end(); };
  const bool all = !named("scenarios") && !named("gaps") && !named("timing") && !named("microbatch");
  if (all || named("scenarios")) scenarios();
  if (all || named("gaps")) {
    std::printf("optimality gap of vpipe vs exact (simulated iteration time), random small instances\n");
    const std::pair<ScheduleKind, int> runs[] = {{ScheduleKind::OneFOneB, 200}, {ScheduleKind::GPipe, 100},
                                                 {ScheduleKind::PipeDream, 100}, {ScheduleKind::ZBH1, 100},
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
  if (all || named("microbatch")) microbatch();
  return 0;
}
