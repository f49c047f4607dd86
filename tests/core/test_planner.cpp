// Planners: exact against brute force, vpipe's feasibility, quality,
// prediction and shape, PipeDream's DP, incremental replanning.
#include <gtest/gtest.h>

#include <initializer_list>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>

#include "core/cost/stage_cost.h"
#include "core/job/job_plan.h"
#include "core/plan/pipedream_planner.h"
#include "core/plan/planner.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "core/spec/spec_error.h"
#include "planner_instances.h"

using namespace pw;

namespace {

double simulate_plan(const PlanRequest& req, const Plan& plan, bool* feasible = nullptr) {
  auto sched = make_schedule(req.schedule, req.stages, req.microbatches, req.chunks);
  SimInput in{req.profile, &plan, sched.get(), req.device, req.microbatch_size};
  SimResult r = simulate(in);
  if (feasible) *feasible = r.feasible;
  return r.iteration_time_ms;
}

// The plan space, computed independently of the planners: every stage's
// bound fits its share of the device (a V's two chunks split it) and its
// swap moves within its forward time. Under a split backward a microbatch
// holds the larger of what its layers keep and W's stash of its layers not
// on swap; the swapped layers' stash goes to the host, also within the
// forward time.
bool in_space(const PlanRequest& req, const Plan& plan) {
  auto sched = make_schedule(req.schedule, req.stages, req.microbatches, req.chunks);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    StageCost c = stage_cost(*req.profile, plan.stages[s], plan.policy);
    if (sched->splits_backward()) c.kept_bytes_per_mb = std::max(c.kept_bytes_per_mb, c.w_stash_bytes_per_mb);
    int d = sched->device_of_virtual_stage(static_cast<int>(s));
    int n = sched->in_flight_of_chunk(d, sched->chunk_of_virtual_stage(static_cast<int>(s)));
    if (peak_memory_bound(c, n, sched->weight_versions(d)) > req.device.memory_bytes / req.chunks)
      return false;
    double swap_ms = c.swap_bytes_per_mb * 8.0 / (req.device.host_link_gbps * 1e9) * 1e3;
    if (c.swap_bytes_per_mb > 0 && swap_ms > c.fwd_ms) return false;
    double stash_ms = c.w_stash_swap_bytes_per_mb * 8.0 / (req.device.host_link_gbps * 1e9) * 1e3;
    if (sched->splits_backward() && c.w_stash_swap_bytes_per_mb > 0 && stash_ms > c.fwd_ms) return false;
  }
  return true;
}

// Every partition x every per-layer policy; the least simulated time in
// the plan space (+inf when none fits).
double brute_force(const PlanRequest& req) {
  const int L = req.profile->size(), p = req.stages * req.chunks;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> ends(p);
  std::function<void(int, int)> part = [&](int s, int first) {
    if (s == p - 1) {
      ends[s] = L - 1;
      Plan plan;
      int a = 0;
      for (int e : ends) {
        plan.stages.push_back({a, e});
        a = e + 1;
      }
      int combos = 1;
      for (int i = 0; i < L; ++i) combos *= 3;
      for (int c = 0; c < combos; ++c) {
        plan.policy.clear();
        for (int i = 0, x = c; i < L; ++i, x /= 3) plan.policy.push_back(static_cast<MemoryPolicy>(x % 3));
        if (!in_space(req, plan)) continue;
        best = std::min(best, simulate_plan(req, plan));
      }
      return;
    }
    for (int e = first; e <= L - p + s; ++e) {
      ends[s] = e;
      part(s + 1, e + 1);
    }
  };
  part(0, 0);
  return best;
}

std::vector<std::string> scenario_jobs() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PW_SOURCE_DIR) + "/resources/jobs/scenarios")) {
    std::string f = e.path().string();
    if (f.size() > 5 && f.substr(f.size() - 5) == ".json" && f.find(".profile.json") == std::string::npos) files.push_back(f);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(Planner, ExactEqualsBruteForceAndVpipeFeasibleWhenAnyPlanIs) {
  std::mt19937_64 rng(42);
  int instances = 0, with_plan = 0;
  for (ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::OneFOneB, ScheduleKind::OneFOneB, ScheduleKind::GPipe,
                         ScheduleKind::PipeDream, ScheduleKind::OneFOneB, ScheduleKind::ZBH1, ScheduleKind::ZBH2,
                         ScheduleKind::ZBV, ScheduleKind::DualPipeV}) {
    int L = 5 + static_cast<int>(rng() % 2), p = 2 + static_cast<int>(rng() % 2), m = p + static_cast<int>(rng() % 3);
    if (is_v_shape(k)) p = 2, m = std::max(m, 4);  // 4 virtual stages; DualPipeV needs 2p microbatches
    auto x = plantest::random_instance(rng, L, p, m, k);
    double brute = brute_force(x.req);
    Plan exact = run_planner("exact", x.req);
    Plan vpipe = run_planner("vpipe", x.req);
    ++instances;
    if (brute == std::numeric_limits<double>::infinity()) continue;
    ++with_plan;
    EXPECT_TRUE(in_space(x.req, exact)) << "instance " << instances;
    EXPECT_NEAR(exact.iteration_time_ms, brute, 1e-9 * brute) << "instance " << instances;
    EXPECT_TRUE(vpipe.feasible) << "instance " << instances << ": " << vpipe.reason;
    EXPECT_TRUE(in_space(x.req, vpipe)) << "instance " << instances;
    EXPECT_GE(vpipe.iteration_time_ms, brute * (1 - 1e-9));
  }
  EXPECT_GE(with_plan, 7);
}

TEST(Planner, BoundHoldsForPlansInTheSpace) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    // Split backwards too: a swapped layer still holds W's stash after B.
    const ScheduleKind kinds[] = {ScheduleKind::OneFOneB, ScheduleKind::GPipe, ScheduleKind::ZBH1, ScheduleKind::ZBV};
    auto x = plantest::random_instance(rng, 8, 3, 3 + static_cast<int>(rng() % 6), kinds[i % 4]);
    Plan plan = run_planner("vpipe", x.req);
    if (!in_space(x.req, plan)) continue;
    ++checked;
    bool feasible = false;
    simulate_plan(x.req, plan, &feasible);
    EXPECT_TRUE(feasible) << "instance " << i;
  }
  // Instances whose plan falls outside the space check nothing: a generator
  // that made them all infeasible would otherwise pass this test vacuously.
  EXPECT_GE(checked, 20) << "of 40 instances";
}

TEST(Planner, VpipeNeverWorseThanBaselinesOnScenarios) {
  auto files = scenario_jobs();
  ASSERT_GE(files.size(), 4u);
  for (const auto& f : files) {
    JobSpec job = load_job(f);
    ModelProfile prof = job_profile(job);
    PlanRequest req = plan_request(job, prof);
    Plan v = run_planner("vpipe", req);
    EXPECT_TRUE(v.feasible) << f << ": " << v.reason;
    bool any_baseline_oom = false;
    for (const char* b : {"gpipe", "pipedream", "uniform"}) {
      Plan p = run_planner(b, req);
      if (!p.feasible) {
        any_baseline_oom = true;
        continue;
      }
      EXPECT_GE(v.throughput_samples_per_s, p.throughput_samples_per_s * (1 - 1e-9)) << f << " vs " << b;
    }
    EXPECT_TRUE(any_baseline_oom) << f << ": memory should bind for some baseline";
  }
}

TEST(Planner, PredictionEqualsSimulationOfTheJsonRoundTrip) {
  for (const auto& f : scenario_jobs()) {
    JobSpec job = load_job(f);
    ModelProfile prof = job_profile(job);
    PlanRequest req = plan_request(job, prof);
    Plan v = run_planner("vpipe", req);
    Plan back = plan_from_json(nlohmann::json::parse(to_json(v).dump()));
    bool feasible = false;
    double t = simulate_plan(req, back, &feasible);
    EXPECT_TRUE(feasible) << f;
    EXPECT_NEAR(v.iteration_time_ms, t, 0.01 * t) << f;
  }
}

TEST(Planner, EarlierStagesRecomputeOrSwapMoreUnder1F1B) {
  JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/scenarios/vpipe-bert48-8x11gb.json");
  ModelProfile prof = job_profile(job);
  PlanRequest req = plan_request(job, prof);
  Plan v = run_planner("vpipe", req);
  std::vector<double> frac;
  for (const auto& r : v.stages) {
    int n = 0;
    for (int l = r.first_layer; l <= r.last_layer; ++l) n += v.policy[l] != MemoryPolicy::Keep;
    frac.push_back(static_cast<double>(n) / r.size());
  }
  double first_half = 0, second_half = 0;
  for (size_t s = 0; s < frac.size(); ++s) (s < frac.size() / 2 ? first_half : second_half) += frac[s];
  EXPECT_GT(frac.front(), 0.2);
  EXPECT_EQ(frac.back(), 0.0);
  EXPECT_GT(first_half, second_half);
  for (size_t s = 1; s < frac.size(); ++s) EXPECT_LE(frac[s], frac[s - 1] + 0.1) << "stage " << s;
}

TEST(Planner, PipeDreamPartitionIsMinMaxOfItsStageTime) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10; ++i) {
    auto x = plantest::random_instance(rng, 9, 3, 4);
    double got = 0;
    auto ranges = pipedream_partition(*x.profile, 3, x.req.device.link_gbps, &got);
    double best = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 7; ++a)
      for (int b = a + 1; b < 8; ++b)
        best = std::min(best, std::max({pipedream_stage_ms(*x.profile, 0, a, x.req.device.link_gbps),
                                        pipedream_stage_ms(*x.profile, a + 1, b, x.req.device.link_gbps),
                                        pipedream_stage_ms(*x.profile, b + 1, 8, x.req.device.link_gbps)}));
    EXPECT_NEAR(got, best, 1e-9);
    double worst = 0;
    for (const auto& r : ranges) worst = std::max(worst, pipedream_stage_ms(*x.profile, r.first_layer, r.last_layer, x.req.device.link_gbps));
    EXPECT_NEAR(worst, best, 1e-9);
    Plan p = run_planner("pipedream", x.req);
    for (auto pol : p.policy) EXPECT_EQ(pol, MemoryPolicy::Keep);
    Plan g = run_planner("gpipe", x.req);
    for (auto pol : g.policy) EXPECT_EQ(pol, MemoryPolicy::Recompute);
  }
}

TEST(Planner, IncrementalReplanMovesFewLayers) {
  std::mt19937_64 rng(5);
  auto x = plantest::random_instance(rng, 100, 8, 16);
  Plan first = run_planner("vpipe", x.req);
  ASSERT_TRUE(first.feasible);
  PlanRequest again = x.req;
  again.current = &first;
  EXPECT_EQ(run_planner("vpipe", again).layers_moved, 0);
  ModelProfile changed = *x.profile;
  changed.layers[30].fwd_ms *= 2;
  changed.layers[30].bwd_ms *= 2;
  again.profile = &changed;
  Plan next = run_planner("vpipe", again);
  EXPECT_TRUE(next.feasible);
  EXPECT_LE(next.layers_moved, 8);
  EXPECT_EQ(next.layers_moved, layers_moved(first, next));
}

TEST(Planner, BadRequestsAreClearErrors) {
  std::mt19937_64 rng(1);
  auto x = plantest::random_instance(rng, 40, 4, 4);
  try {
    run_planner("exact", x.req);
    FAIL() << "exact should refuse 40 layers";
  } catch (const SpecError& e) {  // a job the planner cannot serve: exit 2 naming the field
    EXPECT_EQ(e.path(), "pipeline.planner");
    EXPECT_NE(std::string(e.what()).find("planner exact"), std::string::npos);
  }
  x.req.chunks = 2;
  EXPECT_THROW(run_planner("pipedream", x.req), SpecError);
  EXPECT_THROW(run_planner("exact", x.req), SpecError);
  x.req.chunks = 1;
  x.req.stages = 50;
  EXPECT_THROW(run_planner("vpipe", x.req), std::invalid_argument);
}
