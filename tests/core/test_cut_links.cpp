// The planners' estimate prices each pipeline cut at the link the
// simulator gives it (pipeline_link: the node link where the cut crosses
// nodes, the device's own inside one). Figures are the closed form of one
// transfer, bytes x 8 / gbps + latency, worked out here.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/job/job_plan.h"
#include "core/plan/pipeline_model.h"
#include "core/plan/plan_order.h"
#include "core/plan/planner.h"
#include "core/sim/simulator.h"
#include "core/spec/job_spec.h"

using namespace pw;

namespace {

constexpr std::uint64_t kCut = 3u << 20;  // bytes crossing the cut, each way
constexpr double kDeviceGbps = 100, kDeviceUs = 1, kNodeGbps = 10, kNodeUs = 7;

double closed_form_ms(double gbps, double latency_us) { return kCut * 8.0 / (gbps * 1e9) * 1e3 + latency_us * 1e-3; }

ModelProfile two_layers() {
  ModelProfile p;
  LayerProfile l;
  l.fwd_ms = 2;
  l.bwd_ms = 4;
  l.activation_bytes = 1 << 20;
  l.output_bytes = kCut;
  p.layers.assign(2, l);
  return p;
}

// Two stages, one replica, `gpus_per_node` devices a node (1: the cut
// crosses nodes; 2: both stages in one node).
PlanRequest two_stages(const ModelProfile& p, int gpus_per_node) {
  PlanRequest req;
  req.profile = &p;
  req.device.memory_bytes = 1ull << 40;
  req.device.link_gbps = kDeviceGbps;
  req.device.link_latency_us = kDeviceUs;
  req.stages = 2;
  req.microbatches = 1;
  req.sync.has_topology = true;
  req.sync.topology.gpus_per_node = gpus_per_node;
  req.sync.topology.link_gbps = kDeviceGbps;
  req.sync.topology.link_latency_us = kDeviceUs;
  req.sync.topology.node_link_gbps = kNodeGbps;
  req.sync.topology.node_link_latency_us = kNodeUs;
  req.sync.topology.devices = 2;
  return req;
}

struct Sends : EventSink {
  std::vector<Event> all;
  void on_event(const Event& e) override {
    if (e.kind == EventKind::Send) all.push_back(e);
  }
};

}  // namespace

TEST(CutLinks, ACrossNodeCutCostsTheNodeLinkInTheEstimateAndTheSimulator) {
  const ModelProfile p = two_layers();
  const PlanRequest req = two_stages(p, 1);
  const PipelineModel m(req);
  const double want = closed_form_ms(kNodeGbps, kNodeUs);  // 2.523 ms
  EXPECT_TRUE(m.cut_link(0).crosses_nodes);
  EXPECT_NEAR(m.send_out_ms(0, 0), want, 1e-12);
  EXPECT_NEAR(m.send_in_ms(1, 1), want, 1e-12);
  EXPECT_NEAR(m.hop_out_ms(0, 0), want, 1e-12);
  EXPECT_NEAR(m.hop_in_ms(1, 1), want, 1e-12);
  // The simulator's activation and gradient over the same cut.
  const Plan plan = uniform_partition(2, 2);
  auto sched = make_schedule(req.schedule, 2, 1, 1);
  SimInput in{&p, &plan, sched.get(), req.device, 1};
  in.sync = req.sync;
  Sends sends;
  simulate(in, &sends);
  ASSERT_EQ(sends.all.size(), 2u);
  for (const Event& e : sends.all) EXPECT_NEAR((e.end_ns - e.start_ns) * 1e-6, want, 1e-6);
}

TEST(CutLinks, OneNodeOrNoTopologyKeepsTheDeviceLink) {
  const ModelProfile p = two_layers();
  const double want = closed_form_ms(kDeviceGbps, kDeviceUs);  // 0.2527 ms
  PlanRequest bare = two_stages(p, 2);
  bare.sync = GradientSync{};
  for (const PlanRequest& req : {two_stages(p, 2), bare}) {
    const PipelineModel m(req);
    EXPECT_FALSE(m.cut_link(0).crosses_nodes);
    EXPECT_NEAR(m.send_out_ms(0, 0), want, 1e-12);
    EXPECT_NEAR(m.send_in_ms(1, 1), want, 1e-12);
  }
}

// The generated order's hop between the stages: the same link (no CPU
// time or action overhead in this device, so the hop is the transfer).
TEST(CutLinks, TheGeneratedOrdersHopTakesTheCutsLink) {
  const ModelProfile p = two_layers();
  const Plan plan = uniform_partition(2, 2);
  const OrderProblem across = plan_order_problem(two_stages(p, 1), plan);
  ASSERT_EQ(across.hops.size(), 1u);
  EXPECT_NEAR(across.hops[0], closed_form_ms(kNodeGbps, kNodeUs), 1e-12);
  EXPECT_NEAR(plan_order_problem(two_stages(p, 2), plan).hops[0], closed_form_ms(kDeviceGbps, kDeviceUs), 1e-12);
}

// ResNet-50 (PipeDream's profile) on 8 A100s in nodes of 4: the cut
// between stages 3 and 4 crosses nodes at 200 Gbit/s against NVLink's
// 2400 inside. Priced at NVLink, vpipe chose the stages ending at layers
// 11, 28, 43, 67, 88, 122, 145 (simulated 166.4 ms, recorded before the
// fix); priced as the simulator does it finds a plan the simulator times
// faster than that partition under the solver's own policies.
TEST(CutLinks, PricingTheNodeLinkFindsAFasterResNetPlan) {
  const std::string file = std::string(PW_SOURCE_DIR) + "/resources/jobs/pipedream/resnet50-profile-8gpu-a100.json";
  PreparedJob job = prepare_job(load_job(file, {"cluster.gpus_per_node=4"}));
  ASSERT_TRUE(job.plan.feasible);
  const PlanRequest req = plan_request(job.job, job.profile);
  ASSERT_TRUE(req.sync.has_topology);
  const PipelineModel m(req);
  ASSERT_TRUE(m.cut_link(3).crosses_nodes);
  for (int cut : {0, 1, 2, 4, 5, 6}) EXPECT_FALSE(m.cut_link(cut).crosses_nodes) << cut;

  const std::vector<int> old_ends{11, 28, 43, 67, 88, 122, 145, job.profile.size() - 1};
  Plan old;
  old.policy.assign(job.profile.size(), MemoryPolicy::Keep);
  for (int s = 0, first = 0; s < 8; first = old_ends[s] + 1, ++s) {
    old.stages.push_back({first, old_ends[s]});
    ASSERT_TRUE(m.solve(s, first, old_ends[s], old.policy.data() + first).fits) << s;
  }
  const double now_ms = m.simulate_ms(job.plan), old_ms = m.simulate_ms(old);
  std::printf("resnet50 on 2 nodes of 4: %.3f ms against %.3f ms for the NVLink-priced partition\n", now_ms, old_ms);
  EXPECT_LT(now_ms, old_ms * 0.97) << now_ms << " against " << old_ms;
}
