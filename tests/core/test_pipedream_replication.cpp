// The pipedream planner's per-stage replication over spare devices, and the
// simulator's approximation of a replicated stage (docs/planners.md,
// docs/simulator.md).
#include <gtest/gtest.h>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/job_spec.h"
#include "core/plan/pipedream_hybrid.h"
#include "core/plan/pipedream_planner.h"
#include "core/schedule/schedule.h"
#include "core/sim/simulator.h"
#include "profile_test_util.h"
#include "uniform_pipeline.h"

namespace pw {
namespace {

PlanRequest vgg_request(const ModelProfile& profile, int stages, int devices, int data) {
  PlanRequest req;
  req.profile = &profile;
  req.stages = stages;
  req.microbatches = 4 * stages;
  req.device.link_gbps = 80;  // 10 GB/s
  req.device.memory_bytes = 1ull << 40;
  req.sync.replicas = data;
  req.sync.has_topology = true;
  req.sync.topology.devices = devices;
  return req;
}

TEST(PipeDreamPlannerReplication, SpareDevicesReplicateSingleStages) {
  const ModelProfile vgg = load_profile_file(test::pipedream_graph_path("vgg16"), 0);
  PipeDreamPlanner planner;
  // 8 devices, 2 stages, 2 replicas of the pipeline: 4 workers per pipeline.
  const Plan p = planner.plan(vgg_request(vgg, 2, 8, 2));
  HybridOptions o;
  o.workers = 4;
  o.bandwidth_gbps = 80;
  o.stages = 2;
  const HybridPlan h = pipedream_hybrid(prefix_states(vgg), o);
  ASSERT_EQ(p.stages.size(), 2u);
  ASSERT_EQ(p.replicas.size(), 2u);
  EXPECT_EQ(p.data_parallel, 2);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(p.stages[s].last_layer, h.stages[s].to_state);
    EXPECT_EQ(p.replicas_of(s), 2 * h.stages[s].replicas);
  }
  EXPECT_EQ(p.replicas[0] + p.replicas[1], 8);
  EXPECT_GT(p.replicas[0], p.replicas[1]);  // VGG's convolutions are the heavy, light-weighted front
  validate_plan(p, vgg.size());
}

TEST(PipeDreamPlannerReplication, NoSpareDevicesKeepsTheStraightPlan) {
  const ModelProfile vgg = load_profile_file(test::pipedream_graph_path("vgg16"), 0);
  PipeDreamPlanner planner;
  for (int devices : {0, 4, 8}) {  // 0: a request without a device count
    const Plan p = planner.plan(vgg_request(vgg, 4, devices, devices == 8 ? 2 : 1));
    EXPECT_TRUE(p.replicas.empty());
    const auto straight = pipedream_partition(vgg, 4, 80);
    ASSERT_EQ(p.stages.size(), straight.size());
    for (size_t s = 0; s < straight.size(); ++s) EXPECT_EQ(p.stages[s].last_layer, straight[s].last_layer);
  }
}

// A job whose devices outnumber stages x replicas: the spare ones go to
// single stages, the plan carries them, and it simulates faster than the
// same pipeline without them.
TEST(PipeDreamPlannerReplication, JobWithSpareDevicesPlansAndSimulatesReplicas) {
  auto doc = nlohmann::json::parse(R"({
    "name": "spare",
    "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1, "param_mb": 8},
    "training": {"batch_size": 64, "microbatch_size": 2},
    "cluster": {"devices": 8, "device": "custom", "memory_gb": 16, "tflops": 10},
    "pipeline": {"stages": 2, "planner": "pipedream"},
    "parallel": {"data": 2}
  })");
  const PreparedJob spare = prepare_job(parse_job(doc));
  ASSERT_TRUE(spare.plan.feasible) << spare.plan.reason;
  ASSERT_EQ(spare.plan.replicas.size(), 2u);
  EXPECT_EQ(spare.plan.replicas[0] + spare.plan.replicas[1], 8);
  EXPECT_EQ(spare.plan.replicas[0] % 2, 0);  // each stage's workers, in both replicas of the pipeline
  const Plan back = plan_from_json(to_json(spare.plan));
  EXPECT_EQ(back.replicas, spare.plan.replicas);
  doc["cluster"]["devices"] = 4;  // none spare: the straight plan
  const PreparedJob straight = prepare_job(parse_job(doc));
  EXPECT_TRUE(straight.plan.replicas.empty());
  EXPECT_LT(spare.plan.iteration_time_ms, straight.plan.iteration_time_ms);
}

// The simulator's approximation: a stage on r workers of its pipeline
// computes 1/r of each microbatch; r x data replicas all-reduce its gradients.
TEST(PipeDreamSimulator, ReplicatedStageComputesItsShare) {
  LayerProfile layer;
  layer.fwd_ms = 2;
  layer.bwd_ms = 4;
  layer.param_bytes = 100'000'000;
  test::Pipeline s = test::uniform_pipeline(ScheduleKind::OneFOneB, 2, 8, 1, 2, layer);
  s.device.link_latency_us = 0;
  const SimResult plain = s.run();
  s.plan.replicas = {2, 1};
  const SimResult replicated = s.run();
  EXPECT_NEAR(replicated.stages[0].busy_ms, plain.stages[0].busy_ms / 2, 1e-6);
  EXPECT_NEAR(replicated.stages[1].busy_ms, plain.stages[1].busy_ms, 1e-6);
  EXPECT_EQ(plain.stages[0].sync_ms, 0);
  // Stage 0's 200 MB over 2 replicas by ring at 100 Gbit/s: 2 (2-1)/2 x 200 MB = 16 ms, no latency.
  EXPECT_NEAR(replicated.stages[0].sync_ms, 200e6 * 8 / 100e9 * 1e3, 1e-3);
  EXPECT_EQ(replicated.stages[1].sync_ms, 0);
  EXPECT_LT(replicated.iteration_time_ms, plain.iteration_time_ms + replicated.stages[0].sync_ms);
}

}  // namespace
}  // namespace pw
