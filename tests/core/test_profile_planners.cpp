// Planners on PipeDream's measured profiles. The chain models (alexnet,
// vgg16) are checked against a brute-force search over every split; the
// branching ones against the best split over all down-set chains, a lower
// bound on what PipeDream's own optimizer finds (downset_bound.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/model/graph_order.h"
#include "core/model/profile_io.h"
#include "core/plan/planner.h"
#include "core/spec/device.h"
#include "downset_bound.h"
#include "profile_test_util.h"

using namespace pw;
using namespace pw::test;

namespace {

// Every way to cut the layer order into k non-empty ranges.
double brute_force_slowest_stage(const ModelProfile& p, int k) {
  int n = p.size();
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + p.layers[i].fwd_ms + p.layers[i].bwd_ms;
  double best = prefix[n];
  std::function<void(int, int, double)> go = [&](int start, int left, double worst) {
    if (left == 1) {
      best = std::min(best, std::max(worst, prefix[n] - prefix[start]));
      return;
    }
    for (int end = start; end <= n - left; ++end)  // stage = [start, end]
      go(end + 1, left - 1, std::max(worst, prefix[end + 1] - prefix[start]));
  };
  go(0, k, 0);
  return best;
}

// PipeDream's straight pipeline as its optimizer runs by default: no
// activation compression ratio, so transfers are not counted; memory
// unconstrained. The link is made effectively free for the same effect.
Plan plan_with(const std::string& planner, const ModelProfile& p, int stages) {
  PlanRequest req;
  req.profile = &p;
  req.device = *device_preset("v100-32g");
  req.device.memory_bytes = 1ull << 50;
  req.device.link_gbps = 1e9;
  req.device.link_latency_us = 0;
  req.schedule = ScheduleKind::PipeDream;
  req.stages = stages;
  req.microbatches = 2 * stages;
  req.microbatch_size = p.microbatch_size;
  return run_planner(planner, req);
}

double slowest_stage(const ModelProfile& p, const Plan& plan) {
  double worst = 0;
  for (const auto& r : plan.stages) {
    double t = 0;
    for (int l = r.first_layer; l <= r.last_layer; ++l) t += p.layers[l].fwd_ms + p.layers[l].bwd_ms;
    worst = std::max(worst, t);
  }
  return worst;
}

}  // namespace

TEST(ProfilePlanners, ChainModelsBruteForceAgreesWithTheDownsetOptimum) {
  for (const char* model : {"alexnet", "vgg16"}) {
    ModelProfile p = load_profile_file(pipedream_graph_path(model), 0);
    DownsetBound bound(p);
    ASSERT_TRUE(bound.ok());
    EXPECT_EQ(bound.states(), static_cast<size_t>(p.size()) + 1) << model << " is a chain";
    for (int k : {2, 4, 8}) {
      double brute = brute_force_slowest_stage(p, k);
      double lb = bound.lower_bound(k);
      EXPECT_LE(lb, brute) << model << " k=" << k;
      EXPECT_LE(brute, lb * (1 + 1e-6)) << model << " k=" << k;
    }
  }
}

TEST(ProfilePlanners, PipeDreamMatchesBruteForceOnChains) {
  for (const char* model : {"alexnet", "vgg16"}) {
    ModelProfile p = load_profile_file(pipedream_graph_path(model), 0);
    for (int k : {2, 4, 8}) {
      double brute = brute_force_slowest_stage(p, k);
      Plan plan = plan_with("pipedream", p, k);
      ASSERT_EQ(static_cast<int>(plan.stages.size()), k);
      EXPECT_NEAR(slowest_stage(p, plan), brute, 1e-9 * brute) << model << " k=" << k;
    }
  }
}

TEST(ProfilePlanners, PipeDreamWithinTwoPercentOfTheOptimumOnBranchingGraphs) {
  for (const char* model : {"resnet18", "resnet50", "resnet101", "densenet121", "inception_v3", "gnmt", "gnmt_large"}) {
    ModelProfile p = load_profile_file(pipedream_graph_path(model), 0);
    DownsetBound bound(p);
    ASSERT_TRUE(bound.ok()) << model;
    for (int k : {2, 4, 8}) {
      double lb = bound.lower_bound(k, 1e-6);
      // Laid out for k stages, as job_profile does for a job.
      ModelProfile laid = order_for_stages(p, k);
      double got = slowest_stage(laid, plan_with("pipedream", laid, k));
      // The issue asks for 2%; laid out for k, the split is the optimum itself.
      EXPECT_LE(got, 1.02 * lb) << model << " k=" << k << ": linear-order plan " << got
                                << " ms vs best over all down-set cuts > " << lb << " ms";
      EXPECT_LE(got, lb * (1 + 1e-5)) << model << " k=" << k;
      EXPECT_GE(got, lb) << model << " k=" << k;
    }
  }
}

TEST(ProfilePlanners, OneFixedOrderIsNotEnoughOnBranchingGraphs) {
  // Why job_profile lays the graph out per stage count: in the profiler's
  // execution order the best 8-stage split of ResNet-18 is > 2% off.
  ModelProfile p = load_profile_file(pipedream_graph_path("resnet18"), 0);
  double lb = DownsetBound(p).lower_bound(8, 1e-6);
  EXPECT_GT(slowest_stage(p, plan_with("pipedream", p, 8)), 1.02 * lb);
  ModelProfile laid = order_for_stages(p, 8);
  ASSERT_EQ(laid.size(), p.size());
  EXPECT_LE(slowest_stage(laid, plan_with("pipedream", laid, 8)), lb * (1 + 1e-5));
}

TEST(ProfilePlanners, VPipeAtLeastAsGoodAsPipeDreamUnconstrained) {
  for (const char* model : {"alexnet", "vgg16", "resnet50"}) {
    ModelProfile p = load_profile_file(pipedream_graph_path(model), 0);
    for (int k : {2, 4, 8}) {
      Plan pd = plan_with("pipedream", p, k), vp = plan_with("vpipe", p, k);
      EXPECT_LE(vp.iteration_time_ms, pd.iteration_time_ms * (1 + 1e-9)) << model << " k=" << k;
    }
  }
}
