// Data parallelism in the core: the job fields, the placement rule, the
// ring all-reduce's cost, the simulator's gradient synchronisation and the
// (stages, replicas) search. Figures are worked out here from the closed
// forms (docs/simulator.md, "Gradient synchronisation"), not read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/cluster/topology.h"
#include "core/cost/gradient_sync.h"
#include "core/events/event_kinds.h"
#include "core/job/job_plan.h"
#include "core/plan/parallel_search.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"
#include "uniform_pipeline.h"

using namespace pw;

namespace {

constexpr double MiB = 1024.0 * 1024;

// Ring all-reduce over g members, written out: 2 (g - 1) steps, each moving
// bytes / g over the link and paying its latency.
double ring_ms(double bytes, int g, double gbps, double latency_us) {
  double t = 0;
  for (int step = 0; step < 2 * (g - 1); ++step) t += (bytes / g) * 8 / (gbps * 1e9) * 1e3 + latency_us * 1e-3;
  return t;
}

LayerProfile layer(double fwd, double bwd, double param_mb) {
  LayerProfile l;
  l.fwd_ms = fwd;
  l.bwd_ms = bwd;
  l.param_bytes = static_cast<std::uint64_t>(param_mb * MiB);
  l.activation_bytes = 1 << 20;
  l.output_bytes = 1 << 10;
  return l;
}

struct Collect : EventSink {
  std::vector<Event> all;
  void on_event(const Event& e) override { all.push_back(e); }
};

GradientSync sync_of(int replicas, double bucket_mb) {
  GradientSync s;
  s.replicas = replicas;
  s.bucket_bytes = static_cast<std::uint64_t>(bucket_mb * MiB);
  return s;  // no topology: the device's own link (100 Gbit/s, 0 us in the rig)
}

}  // namespace

TEST(RingAllReduce, MatchesTheStepByStepRing) {
  for (int g : {2, 3, 4, 8, 256})
    for (double bytes : {1.0, 4096.0, 25 * MiB, 1e9}) {
      LinkSpeed link{200, 6, false};
      EXPECT_NEAR(ring_allreduce_ms(static_cast<std::uint64_t>(bytes), g, link), ring_ms(bytes, g, 200, 6), 1e-9)
          << g << " " << bytes;
    }
  EXPECT_EQ(ring_allreduce_ms(1 << 20, 1, {100, 10, false}), 0);  // one replica: nothing to reduce
}

TEST(Topology, PlacementRuleKeepsAStagesReplicasTogether) {
  Topology t;
  t.gpus_per_node = 8;
  t.link_gbps = 2400;
  t.link_latency_us = 8;
  t.node_link_gbps = 200;
  t.node_link_latency_us = 6;
  EXPECT_EQ(device_of(0, 0, 4), 0);
  EXPECT_EQ(device_of(1, 0, 4), 4);
  EXPECT_EQ(device_of(3, 2, 4), 14);
  // 4 replicas per stage: a stage's group fits in a node; stages 0 and 1
  // share node 0, stages 1 and 2 sit on nodes 0 and 1.
  EXPECT_FALSE(group_link(t, device_of(1, 0, 4), 4).crosses_nodes);
  EXPECT_FALSE(stage_cut_link(t, 0, 4).crosses_nodes);
  EXPECT_TRUE(stage_cut_link(t, 1, 4).crosses_nodes);
  EXPECT_EQ(stage_cut_link(t, 1, 4).gbps, 200);
  // 16 replicas: every group spans two nodes, every cut crosses.
  EXPECT_TRUE(group_link(t, device_of(2, 0, 16), 16).crosses_nodes);
  EXPECT_EQ(group_link(t, device_of(2, 0, 16), 16).latency_us, 6);
  EXPECT_TRUE(stage_cut_link(t, 0, 16).crosses_nodes);
  // One replica, 8 per node: cuts 7|8 and 15|16 cross.
  for (int s = 0; s < 20; ++s) EXPECT_EQ(stage_cut_link(t, s, 1).crosses_nodes, (s + 1) % 8 == 0) << s;
}

TEST(GradientSyncSim, OneBucketAfterTheBackwardCostsTheRingExactly) {
  // One stage, one microbatch: F, B, then one bucket of all four layers
  // (ready when the backward ends: its first layer is the last computed),
  // then the step. Nothing overlaps the all-reduce.
  auto p = test::uniform_pipeline(ScheduleKind::GPipe, 1, 1, 1, 4, layer(1, 2, 10));
  for (int g : {2, 4, 16}) {
    SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
    in.sync = sync_of(g, 64);
    Collect c;
    SimResult r = simulate(in, &c);
    const double sync = ring_ms(40 * MiB, g, 100, 0);
    EXPECT_NEAR(r.iteration_time_ms, 4 + 8 + sync, 1e-5) << g;
    EXPECT_NEAR(r.stages[0].sync_ms, sync, 1e-5);
    EXPECT_NEAR(r.stages[0].sync_exposed_ms, sync, 1e-5);
    EXPECT_EQ(r.replicas, g);
    EXPECT_NEAR(r.throughput_samples_per_s, g * 1.0 / ((4 + 8 + sync) / 1e3), 1e-6 * r.throughput_samples_per_s);
    auto n = std::count_if(c.all.begin(), c.all.end(), [](const Event& e) { return e.kind == EventKind::AllReduce; });
    EXPECT_EQ(n, 1);
  }
}

TEST(GradientSyncSim, BucketsWithoutOverlapSumTheirRings) {
  // Layers with no backward time: every bucket is ready when the backward
  // ends, so they run back to back: the closed form with no overlap.
  auto p = test::uniform_pipeline(ScheduleKind::GPipe, 1, 2, 1, 6, layer(1, 0, 10));
  SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
  in.sync = sync_of(4, 20);  // 2 layers of 10 MiB per bucket: 3 buckets
  Collect c;
  SimResult r = simulate(in, &c);
  const double bucket = ring_ms(20 * MiB, 4, 100, 0);
  EXPECT_NEAR(r.iteration_time_ms, 2 * 6 + 3 * bucket, 1e-5);
  std::vector<Event> ar;
  for (const auto& e : c.all)
    if (e.kind == EventKind::AllReduce) ar.push_back(e);
  ASSERT_EQ(ar.size(), 3u);
  EXPECT_EQ(ar[0].first_layer, 4);  // the last layers' gradients first
  EXPECT_EQ(ar[0].last_layer, 5);
  EXPECT_EQ(ar[2].first_layer, 0);
  EXPECT_EQ(ar[0].bytes, static_cast<std::int64_t>(20 * MiB));
  for (std::size_t i = 1; i < ar.size(); ++i) EXPECT_EQ(ar[i].start_ns, ar[i - 1].end_ns);
  EXPECT_EQ(lane_of(EventKind::AllReduce), EventLane::Collective);
  EXPECT_FALSE(is_busy(EventKind::AllReduce));
}

TEST(GradientSyncSim, OverlappedBucketsLeaveOnlyTheLastExposed) {
  // One bucket per layer, each all-reduce shorter than one layer's
  // backward: each runs while the layers below compute, and only the last
  // (layer 0's, ready when the backward ends) delays the step.
  auto p = test::uniform_pipeline(ScheduleKind::GPipe, 1, 1, 1, 8, layer(1, 2, 10));
  SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
  SimResult alone = simulate(in);
  in.sync = sync_of(4, 10);
  const double bucket = ring_ms(10 * MiB, 4, 100, 0);
  ASSERT_LT(bucket, 2.0);
  SimResult r = simulate(in);
  EXPECT_NEAR(r.iteration_time_ms, alone.iteration_time_ms + bucket, 1e-5);
  EXPECT_NEAR(r.stages[0].sync_ms, 8 * bucket, 1e-5);
  EXPECT_NEAR(r.stages[0].sync_exposed_ms, bucket, 1e-5);
}

TEST(GradientSyncSim, NeverFasterThanThePipelineNorSlowerThanUnoverlapped) {
  // Several stages, schedules and bucket sizes: the sync only adds, and
  // never more than every bucket run after the pipeline.
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZBH1})
    for (double bucket_mb : {5.0, 25.0, 1000.0})
      for (int g : {2, 8}) {
        auto p = test::uniform_pipeline(kind, 4, 8, 1, 3, layer(1, 2, 12));
        SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
        const SimResult alone = simulate(in);
        in.sync = sync_of(g, bucket_mb);
        const SimResult r = simulate(in);
        double total = 0;
        for (const auto& st : r.stages) total = std::max(total, st.sync_ms);
        EXPECT_GE(r.iteration_time_ms, alone.iteration_time_ms - 1e-9);
        EXPECT_LE(r.iteration_time_ms, alone.iteration_time_ms + total + 1e-6) << to_string(kind) << bucket_mb;
        EXPECT_NEAR(total, 3 * ring_ms(12 * MiB, g, 100, 0), 1e-6);  // each stage's 36 MiB in rings
      }
}

TEST(GradientSyncSim, BucketMemoryIsHeldUntilTheStep) {
  auto p = test::uniform_pipeline(ScheduleKind::GPipe, 1, 1, 1, 4, layer(1, 2, 100));
  SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
  const SimResult alone = simulate(in);
  in.sync = sync_of(2, 1000);
  const SimResult r = simulate(in);
  // Static memory (weights + gradients) plus one flat bucket of the 400 MiB
  // of gradients: above what the pipeline alone peaked at after its backward.
  const std::uint64_t statics = 2 * 4 * static_cast<std::uint64_t>(100 * MiB);
  EXPECT_GE(r.stages[0].peak_memory_bytes, statics + static_cast<std::uint64_t>(400 * MiB));
  EXPECT_GT(r.stages[0].peak_memory_bytes, alone.stages[0].peak_memory_bytes);
}

namespace {
nlohmann::json dp_job() {
  return nlohmann::json::parse(R"({
    "name": "dp",
    "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1, "param_mb": 8},
    "training": {"batch_size": 64, "microbatch_size": 2},
    "cluster": {"devices": 8, "device": "custom", "memory_gb": 16, "tflops": 10},
    "pipeline": {"stages": 4, "planner": "uniform"},
    "parallel": {"data": 2}
  })");
}
std::string error_of(const nlohmann::json& doc) {
  try {
    parse_job(doc);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ParallelSpec, ReplicasShareTheGlobalBatch) {
  JobSpec j = parse_job(dp_job());
  EXPECT_EQ(j.parallel.data, 2);
  EXPECT_EQ(j.pipeline.microbatches, 16);  // 64 / (2 x 2)
  EXPECT_EQ(j.replica_batch(), 32);
  EXPECT_DOUBLE_EQ(j.parallel.bucket_mb, 25);
  // Stages default to what the replicas leave.
  auto d = dp_job();
  d["pipeline"].erase("stages");
  d["parallel"]["data"] = 4;
  EXPECT_EQ(parse_job(d).pipeline.stages, 2);
}

TEST(ParallelSpec, RefusalsNameTheField) {
  auto d = dp_job();
  d["parallel"]["data"] = 3;
  EXPECT_NE(error_of(d).find("parallel.data: training.batch_size (64) must be a multiple of data x microbatch_size"),
            std::string::npos)
      << error_of(d);
  d = dp_job();
  d["parallel"]["data"] = 4;
  EXPECT_NE(error_of(d).find("pipeline.stages: stages x parallel.data (4 x 4) must be <= cluster.devices (8)"),
            std::string::npos)
      << error_of(d);
  d = dp_job();
  d["parallel"]["data"] = "many";
  EXPECT_NE(error_of(d).find("parallel.data: must be an integer or \"auto\""), std::string::npos) << error_of(d);
  d = dp_job();
  d["parallel"]["replicas"] = 2;
  EXPECT_NE(error_of(d).find("parallel.replicas"), std::string::npos) << error_of(d);
  d = dp_job();
  d["pipeline"]["microbatches"] = 32;
  EXPECT_NE(error_of(d).find("parallel.data x training.microbatch_size"), std::string::npos) << error_of(d);
  d = dp_job();
  d["parallel"]["data"] = "auto";
  d["pipeline"]["microbatches"] = 16;
  EXPECT_NE(error_of(d).find("pipeline.microbatches"), std::string::npos) << error_of(d);
  d = dp_job();
  d["cluster"]["gpus_per_node"] = 0;
  EXPECT_NE(error_of(d).find("cluster.gpus_per_node"), std::string::npos) << error_of(d);
}

TEST(ParallelSpec, NodeDefaultsPerPreset) {
  auto d = dp_job();
  d["cluster"] = {{"devices", 64}, {"device", "a100-80g"}};
  JobSpec j = parse_job(d);
  EXPECT_EQ(j.cluster.gpus_per_node, 8);
  EXPECT_EQ(j.cluster.node_link_gbps, 200);
  d["cluster"] = {{"devices", 10}, {"device", "cpu"}};
  j = parse_job(d);
  EXPECT_EQ(j.cluster.gpus_per_node, 10);  // one host
  d["cluster"] = {{"devices", 64}, {"device", "h100"}, {"gpus_per_node", 4}, {"node_link_gbps", 100}};
  j = parse_job(d);
  EXPECT_EQ(j.cluster.gpus_per_node, 4);
  EXPECT_EQ(topology_of(j.cluster).node_link_gbps, 100);
}

TEST(ParallelSearch, CandidatesUseEveryDeviceAndFitTheBatch) {
  auto d = dp_job();
  d["pipeline"]["stages"] = "auto";
  d["parallel"]["data"] = "auto";
  JobSpec j = parse_job(d);
  auto c = parallel_candidates(j, 8);
  // 8 devices: 1x8 (64 / 16 = 4 per replica, 2 microbatches), 2x4, 4x2, 8x1.
  std::vector<std::pair<int, int>> want{{1, 8}, {2, 4}, {4, 2}, {8, 1}};
  EXPECT_EQ(c, want);
  // A fixed degree is held.
  d["parallel"]["data"] = 4;
  d["cluster"]["devices"] = 16;
  c = parallel_candidates(parse_job(d), 8);
  want = {{4, 4}};
  EXPECT_EQ(c, want);
}

TEST(ParallelSearch, ChoosesTheFastestSplitThePlansShow) {
  auto d = dp_job();
  d["pipeline"]["stages"] = "auto";
  d["parallel"]["data"] = "auto";
  PreparedJob p = prepare_job(parse_job(d));
  ASSERT_EQ(p.plan.parallel_search.size(), 4u);
  double best = 1e300;
  for (const auto& row : p.plan.parallel_search)
    if (row.feasible && row.iteration_time_ms > 0) best = std::min(best, row.iteration_time_ms);
  EXPECT_DOUBLE_EQ(p.plan.iteration_time_ms, best);
  EXPECT_EQ(p.job.pipeline.stages * p.job.parallel.data, 8);
  EXPECT_EQ(p.plan.data_parallel, p.job.parallel.data);
  // Each row planned alone at its split gives the row's figure.
  for (const auto& row : p.plan.parallel_search) {
    if (row.iteration_time_ms <= 0) continue;
    auto fixed = dp_job();
    fixed["pipeline"]["stages"] = row.stages;
    fixed["parallel"]["data"] = row.replicas;
    EXPECT_NEAR(prepare_job(parse_job(fixed)).plan.iteration_time_ms, row.iteration_time_ms, 1e-9) << row.stages;
  }
  // The plan's JSON says the split.
  auto j = to_json(p.plan);
  EXPECT_EQ(j["parallel"]["data"], p.job.parallel.data);
  EXPECT_EQ(j["stages"][0]["replicas"], p.job.parallel.data);
  EXPECT_EQ(plan_from_json(j).data_parallel, p.job.parallel.data);
}

// One definition of busy (issue 42): the simulator's bubble is the one a
// recording's events give (is_busy kinds summed per stage over the
// iteration), also when sends hold their sender and when replicas sync.
TEST(OneBusy, SimulatedBubbleEqualsTheBubbleOfItsEvents) {
  for (double send_cpu_us : {0.0, 200.0})
    for (int replicas : {1, 4}) {
      auto p = test::uniform_pipeline(ScheduleKind::OneFOneB, 4, 8, 1, 2, layer(1, 2, 8));
      p.device.send_cpu_us = send_cpu_us;
      p.device.send_cpu_gbps = 10;
      p.device.action_overhead_us = 50;
      SimInput in{&p.profile, &p.plan, p.schedule.get(), p.device, 1};
      in.sync = sync_of(replicas, 4);
      Collect c;
      SimResult r = simulate(in, &c);
      std::int64_t first = INT64_MAX, last = 0, busy = 0;
      for (const auto& e : c.all) {
        first = std::min(first, e.start_ns);
        last = std::max(last, e.end_ns);
        if (is_busy(e.kind)) busy += e.end_ns - e.start_ns;
      }
      const double span = static_cast<double>(last - first);
      EXPECT_NEAR(r.iteration_time_ms, span / 1e6, 1e-9) << send_cpu_us << " " << replicas;
      EXPECT_NEAR(r.bubble_fraction, 1.0 - busy / (4.0 * span), 1e-12) << send_cpu_us << " " << replicas;
    }
}
