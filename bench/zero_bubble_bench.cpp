// Zero-bubble figures (issue 19), simulated: on the VPipe scenarios and the
// GPT jobs, vpipe's plan under each zero-bubble schedule and under "auto"
// against vpipe's 1F1B plan, all at the job's memory budget; and planning
// time with "auto" against 1F1B alone on 100 layers x 8 stages; and the
// generated orders of issue 28 against each hand-built one (zero_bubble_generated.cpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "zero_bubble_generated.h"
#include "zero_bubble_grid.h"
#include "core/job/job_plan.h"
#include "core/plan/planner.h"
#include "planner_instances.h"

using namespace pw;

namespace {

std::string ratio(const Plan& p, const Plan& base) {
  if (!p.feasible) return "OOM";
  if (!base.feasible) return "(1f1b OOM)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (p.throughput_samples_per_s / base.throughput_samples_per_s - 1) * 100);
  return buf;
}

std::vector<std::string> job_files() {
  std::vector<std::string> files;
  auto add = [&](const std::string& dir, const std::string& must) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::string f = e.path().string(), n = e.path().filename().string();
      if (n.find(".profile.json") != std::string::npos || n.size() < 5 || n.substr(n.size() - 5) != ".json") continue;
      if (n.find(must) != std::string::npos) files.push_back(f);
    }
  };
  const std::string jobs = std::string(PW_SOURCE_DIR) + "/resources/jobs";
  add(jobs + "/scenarios", "vpipe-");
  add(jobs, "gpt");
  std::sort(files.begin(), files.end());
  return files;
}

void throughput() {
  std::printf("throughput over vpipe's 1F1B plan, simulated, same memory budget (auto: vpipe also picks the schedule)\n");
  std::printf("  %-34s %9s %9s %9s %9s %11s %10s %12s %20s %10s\n", "job", "1f1b s/s", "zb-h1", "zb-h2", "zb-v", "dualpipe-v",
              "generated", "generated V", "auto (winner)", "auto/hand");
  for (const auto& f : job_files()) {
    JobSpec job = load_job(f);
    if (job.pipeline.stages < 2) continue;
    ModelProfile prof = job_profile(job);
    PlanRequest req = plan_request(job, prof);
    req.auto_schedule = false;
    req.schedule = ScheduleKind::OneFOneB;
    req.chunks = 1;
    Plan base = run_planner("vpipe", req);
    std::string cells[6];
    double best_hand = base.feasible ? base.throughput_samples_per_s : 0;  // samples/s of the best hand-built plan
    int i = 0;
    for (auto [kind, chunks] : {std::pair{ScheduleKind::ZBH1, 1}, std::pair{ScheduleKind::ZBH2, 1},
                                std::pair{ScheduleKind::ZBV, 2}, std::pair{ScheduleKind::DualPipeV, 2},
                                std::pair{ScheduleKind::Generated, 1}, std::pair{ScheduleKind::Generated, 2}}) {
      PlanRequest r = req;
      r.schedule = kind;
      r.chunks = chunks;
      bool shape = r.stages * chunks <= prof.size() && (kind != ScheduleKind::DualPipeV || r.microbatches >= 2 * r.stages);
      if (!shape) {
        cells[i++] = "n/a";
        continue;
      }
      Plan q = run_planner("vpipe", r);
      if (kind != ScheduleKind::Generated && q.feasible) best_hand = std::max(best_hand, q.throughput_samples_per_s);
      cells[i++] = ratio(q, base);
    }
    PlanRequest a = req;
    a.auto_schedule = true;
    Plan best = run_planner("vpipe", a);
    std::string win = ratio(best, base) + " (" + best.schedule + (best.schedule == "generated" && best.stages.size() > static_cast<size_t>(req.stages) ? " V" : "") + ")";
    char vs_hand[32] = "-";
    if (best.feasible && best_hand > 0)
      std::snprintf(vs_hand, sizeof vs_hand, "%+.1f%%", (best.throughput_samples_per_s / best_hand - 1) * 100);
    std::printf("  %-34s %9.1f %9s %9s %9s %11s %10s %12s %20s %10s\n", job.name.c_str(), base.throughput_samples_per_s,
                cells[0].c_str(), cells[1].c_str(), cells[2].c_str(), cells[3].c_str(), cells[4].c_str(), cells[5].c_str(),
                win.c_str(), vs_hand);
  }
  std::printf("  (auto/hand: auto's plan against the best hand-built family above, each of those planned with the full\n"
              "  budget where auto splits it over its 9 families; Zero Bubble paper: up to +23%% over 1F1B at similar\n"
              "  memory, +31%% with more memory)\n\n");
}

// Processor time of this (single-threaded) program: on a shared machine
// the wall clock also counts the other programs' turns.
double cpu_ms() { return 1e3 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

void planning_time() {
  std::mt19937_64 rng(19);
  const int reps = bench::quick_or(2, 5);
  double t1 = 0, ta = 0, c1 = 0, ca = 0;
  for (int i = 0; i < reps; ++i) {
    auto x = plantest::random_instance(rng, 100, 8, 32);
    const double cpu0 = cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    Plan one = run_planner("vpipe", x.req);
    auto t_mid = std::chrono::steady_clock::now();
    const double cpu_mid = cpu_ms();
    PlanRequest a = x.req;
    a.auto_schedule = true;
    Plan best = run_planner("vpipe", a);
    auto t_end = std::chrono::steady_clock::now();
    const double cpu_end = cpu_ms();
    t1 += std::chrono::duration<double, std::milli>(t_mid - t0).count();
    ta += std::chrono::duration<double, std::milli>(t_end - t_mid).count();
    c1 += cpu_mid - cpu0;
    ca += cpu_end - cpu_mid;
  }
  std::printf("planning time, vpipe, 100 layers x 8 stages x 32 microbatches (mean of %d random instances)\n", reps);
  std::printf("  1f1b only %.1f ms, auto (9 families) %.1f ms = x%.2f (target < 50 ms)\n", t1 / reps, ta / reps,
              ta / t1);
  std::printf("  CPU time: 1f1b only %.1f ms, auto %.1f ms = x%.2f\n\n", c1 / reps, ca / reps, ca / c1);
}

}  // namespace

// Sections by name (grid, orders, jobs, planning); none named runs all.
int main(int argc, char** argv) {
  const std::vector<std::string> names(argv + 1, argv + argc);
  auto want = [&](const char* s) { return names.empty() || std::find(names.begin(), names.end(), s) != names.end(); };
  for (const auto& n : names)
    if (n != "grid" && n != "orders" && n != "jobs" && n != "planning") {
      std::fprintf(stderr, "unknown section \"%s\" (known: grid, orders, jobs, planning)\n", n.c_str());
      return 2;
    }
  if (want("grid")) bench::generated_grid();
  if (want("orders")) bench::generated_orders();
  if (want("jobs")) throughput();
  if (want("planning")) planning_time();
  return 0;
}
