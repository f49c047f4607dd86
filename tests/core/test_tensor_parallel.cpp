// Tensor parallelism in the core (issue 40): the job fields and their
// refusals, the Megatron placement rule, the activation bytes against
// Korthikanti et al.'s formulas, the tensor all-reduce against a ring
// written out step by step, the simulator's tensor all-reduce events, the
// (tensor, stages, replicas) search, and t = 1 leaving every figure as it
// was. Expected values are closed forms written here (or figures the
// build before tensor parallelism printed), never read back from the code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/analysis/idle_attribution.h"
#include "core/cluster/topology.h"
#include "core/cost/stage_cost.h"
#include "core/model/tensor_parallel.h"
#include "core/events/event_kinds.h"
#include "core/job/job_plan.h"
#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"
#include "core/plan/parallel_search.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

using namespace pw;

namespace {

// A GPT whose every term of the formulas is a whole number of bytes for
// t = 1, 2, 4, 8: s b h = 512 x 2 x 1024, 5 a s^2 b / t with a = 16.
nlohmann::json gpt_job(int t = 1, bool sequence = false) {
  return {{"name", "tp"},
          {"model",
           {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", 4}, {"hidden", 1024}, {"heads", 16},
            {"seq_len", 512}, {"vocab", 4096}}},
          {"training", {{"batch_size", 16}, {"microbatch_size", 2}}},
          {"cluster", {{"devices", 8}, {"device", "a100-80g"}}},
          {"pipeline", {{"stages", 1}, {"schedule", "1f1b"}}},
          {"parallel", {{"tensor", t}, {"sequence", sequence}}}};
}

std::string refusal_path(const nlohmann::json& doc) {
  try {
    parse_job(doc);
  } catch (const SpecError& e) {
    return e.path();
  }
  return "(accepted)";
}

// Ring all-reduce over g members, written out: 2 (g - 1) steps, each moving
// bytes / g over the link and paying its latency.
double ring_ms(double bytes, int g, double gbps, double latency_us) {
  double t = 0;
  for (int step = 0; step < 2 * (g - 1); ++step) t += (bytes / g) * 8 / (gbps * 1e9) * 1e3 + latency_us * 1e-3;
  return t;
}

struct Collect : EventSink {
  std::vector<Event> all;
  void on_event(const Event& e) override { all.push_back(e); }
};

}  // namespace

TEST(TensorSpec, FieldsParseWithTheirDefaults) {
  auto d = gpt_job();
  d.erase("parallel");
  JobSpec j = parse_job(d);
  EXPECT_EQ(j.parallel.tensor, 1);
  EXPECT_FALSE(j.parallel.tensor_auto);
  EXPECT_FALSE(j.parallel.sequence);
  j = parse_job(gpt_job(4, true));
  EXPECT_EQ(j.parallel.tensor, 4);
  EXPECT_TRUE(j.parallel.sequence);
  // Stages left out take the devices the tensor groups leave: 8 / 4.
  d = gpt_job(4);
  d["pipeline"].erase("stages");
  EXPECT_EQ(parse_job(d).pipeline.stages, 2);
  d["parallel"]["tensor"] = "auto";
  j = parse_job(d);
  EXPECT_TRUE(j.parallel.tensor_auto);
  EXPECT_TRUE(j.parallel_searched());
}

TEST(TensorSpec, RefusalsNameTheField) {
  auto d = gpt_job(32);  // 16 heads
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job(3);  // divides neither 16 heads nor a node of 8
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job(4);
  d["pipeline"]["stages"] = 4;  // 4 x 4 > 8 devices
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job(4);
  d["cluster"]["devices"] = 12;
  d["cluster"]["gpus_per_node"] = 6;  // a group of 4 would cross nodes
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job(2);
  d["model"] = {{"kind", "cnn"}, {"channels", {8, 16}}};
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job(0);
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job();
  d["parallel"]["tensor"] = "most";
  EXPECT_EQ(refusal_path(d), "parallel.tensor");
  d = gpt_job();
  d["parallel"]["sequence"] = 3;
  EXPECT_EQ(refusal_path(d), "parallel.sequence");
  // The whole job in one node: any group of neighbours fits.
  d = gpt_job(2);
  d["cluster"]["devices"] = 3;
  d["cluster"]["device"] = "cpu";
  EXPECT_EQ(refusal_path(d), "(accepted)");
}

TEST(TensorPlacement, TensorRankFastestThenReplicaThenStage) {
  // Megatron's order written out: rank = ((stage x d) + replica) x t + k.
  for (int d : {1, 2, 3})
    for (int t : {1, 2, 4, 8}) {
      std::set<int> seen;
      for (int s = 0; s < 4; ++s)
        for (int r = 0; r < d; ++r)
          for (int k = 0; k < t; ++k) {
            int expect = s * d * t + r * t + k;
            EXPECT_EQ(device_of(s, r, d, t, k), expect);
            seen.insert(device_of(s, r, d, t, k));
          }
      EXPECT_EQ(static_cast<int>(seen.size()), 4 * d * t);  // a bijection onto 0..n-1
    }
  // t = 1 is the data-parallel rule unchanged.
  EXPECT_EQ(device_of(3, 2, 4), 14);
  // A group of t | gpus_per_node neighbours never crosses a node.
  Topology topo;
  topo.gpus_per_node = 8;
  for (int t : {1, 2, 4, 8})
    for (int g = 0; g < 64; ++g)
      EXPECT_EQ(node_of(topo, device_of(g, 0, 1, t, 0)), node_of(topo, device_of(g, 0, 1, t, t - 1)));
  EXPECT_TRUE(tensor_group_fits(4, 8, 64));
  EXPECT_FALSE(tensor_group_fits(4, 6, 12));
  EXPECT_TRUE(tensor_group_fits(2, 3, 3));
}

TEST(TensorCost, ActivationBytesAreKorthikantisFormulas) {
  const double s = 512, b = 2, h = 1024, a = 16;
  for (bool sp : {false, true})
    for (int t : {1, 2, 4, 8}) {
      SCOPED_TRACE("t " + std::to_string(t) + (sp ? " sp" : ""));
      JobSpec job = parse_job(gpt_job(t, sp));
      ModelProfile p = analytic_profile(job);
      ASSERT_EQ(p.layers[1].type, "attention");
      ASSERT_EQ(p.layers[2].type, "ffn");
      const double layer = static_cast<double>(p.layers[1].activation_bytes + p.layers[2].activation_bytes);
      // Korthikanti et al. 2022, section 4 (fp16 bytes per layer).
      const double want = sp ? s * b * h * (34.0 / t + 5 * a * s / (h * t)) : s * b * h * (10 + 24.0 / t + 5 * a * s / (h * t));
      EXPECT_EQ(layer, want);
      EXPECT_EQ(korthikanti_layer_activation_bytes(s, b, h, a, t, sp, false), want);
      // Selective recomputation keeps everything but the attention core.
      std::vector<MemoryPolicy> pol(p.size(), MemoryPolicy::Selective);
      StageCost c = stage_cost(p, {1, 2}, pol);
      const double selective = sp ? s * b * h * 34.0 / t : s * b * h * (10 + 24.0 / t);
      EXPECT_EQ(static_cast<double>(c.kept_bytes_per_mb), selective);
      EXPECT_EQ(korthikanti_layer_activation_bytes(s, b, h, a, t, sp, true), selective);
      // ... and pays the core's forward: 4 s h FLOPs per token, over t.
      const double tflops = job.cluster.device.tflops, penalty = job.cluster.device.small_batch_penalty;
      const double core_ms = b * s * 4 * s * h / t / (tflops * 1e12) * 1e3;
      EXPECT_NEAR(c.recompute_ms, core_ms * (1 + penalty / b) + job.cluster.device.layer_dispatch_us * 1e-3, 1e-12);
      // Full recompute keeps the block inputs: 2 s b h each (/t with sequence parallelism).
      pol.assign(p.size(), MemoryPolicy::Recompute);
      EXPECT_EQ(static_cast<double>(stage_cost(p, {1, 2}, pol).kept_bytes_per_mb), 2 * 2 * s * b * h / (sp ? t : 1));
      // Weights, gradients and optimizer state: the layer's 12 h^2 + 13 h
      // parameters, the split ones over t (all but the layer norms' 4 h
      // and the row-parallel biases' h).
      const double params = (12 * h * h + 8 * h) / t + 5 * h;
      EXPECT_NEAR(static_cast<double>(p.layers[1].param_bytes + p.layers[2].param_bytes), 2 * params, 2);
    }
}

TEST(TensorCost, TheEmbeddingSplitsItsTokenTableOnlyByVocabulary) {
  // Megatron's VocabParallelEmbedding (and the engine's): each tensor rank
  // holds vocab / t token rows; the position table (seq_len x hidden) stays
  // whole on every rank. fp16 parameters: 2 bytes each.
  const double vocab = 4096, s = 512, h = 1024;
  for (int t : {1, 2, 4, 8}) {
    SCOPED_TRACE("t " + std::to_string(t));
    ModelProfile p = analytic_profile(parse_job(gpt_job(t)));
    ASSERT_EQ(p.layers[0].type, "embedding");
    EXPECT_NEAR(static_cast<double>(p.layers[0].param_bytes), 2 * (vocab * h / t + s * h), 2);
  }
}

TEST(TensorCost, AllReducesAreTwoRingsEachWayPerLayer) {
  for (int t : {2, 4, 8}) {
    JobSpec job = parse_job(gpt_job(t));
    ModelProfile p = analytic_profile(job);
    const auto& dev = job.cluster.device;
    const double bytes = 2.0 * 2 * 512 * 1024;  // one [s, b, h] fp16 tensor
    const double one = ring_ms(bytes, t, dev.link_gbps, dev.link_latency_us);
    for (int l : {1, 2}) {  // attention, FFN: one each way
      EXPECT_NEAR(p.layers[l].tensor_fwd_ms, one, 1e-12);
      EXPECT_NEAR(p.layers[l].tensor_bwd_ms, one, 1e-12);
      EXPECT_EQ(p.layers[l].tensor_fwd_bytes, static_cast<std::uint64_t>(bytes));
    }
    EXPECT_NEAR(tensor_allreduce_ms(static_cast<std::uint64_t>(bytes), t, {dev.link_gbps, dev.link_latency_us, false}),
                one, 1e-12);
    // The FFN's forward: its FLOPs over t at the shard's microbatch rule,
    // plus the all-reduce.
    const double flops = 2.0 * 512 * 4 * 4 * 1024.0 * 1024 / t;
    const double ms = flops / (dev.tflops * 1e12) * 1e3;
    EXPECT_NEAR(p.layers[2].fwd_ms, ms * (1 + dev.small_batch_penalty / 2) + dev.layer_dispatch_us * 1e-3 + one, 1e-12);
    // W has no all-reduce; B carries it.
    EXPECT_NEAR(p.layers[2].bwd_ms - weight_grad_ms(p.layers[2]), ms * (1 + dev.small_batch_penalty / 2) +
                                                                        dev.layer_dispatch_us * 1e-3 + one, 1e-9);
    // Embedding one forward, head one backward.
    EXPECT_NEAR(p.layers.front().tensor_fwd_ms, one, 1e-12);
    EXPECT_EQ(p.layers.front().tensor_bwd_ms, 0);
    EXPECT_EQ(p.layers.back().tensor_fwd_ms, 0);
    EXPECT_NEAR(p.layers.back().tensor_bwd_ms, one, 1e-12);
  }
  // t = 1: none.
  ModelProfile p = analytic_profile(parse_job(gpt_job(1)));
  for (const auto& l : p.layers) EXPECT_EQ(l.tensor_fwd_ms + l.tensor_bwd_ms, 0);
}

TEST(TensorCost, OneTensorRankLeavesEveryFigureAsItWas) {
  // Iteration times the build before tensor parallelism printed
  // (`pipewright simulate resources/jobs/<job>.json --json`, commit 7a04a9e;
  // since issue 43 a swap-in due after a backward is reloaded behind it,
  // which moved the planner's choices: the figures are that build's). That
  // build's v100 preset (gpt32's) had 2400 Gbit/s of NVLink, the
  // datasheet's total of both directions (per direction it is 1200 since),
  // so the job runs here on the link those figures were made with.
  struct Case {
    const char* job;
    double iteration_ms;
    std::uint64_t stage0_peak;
  };
  for (const Case& c : {Case{"gpt32-8gpu", 7440.34313, 33056030720ull}, Case{"bert24-4gpu", 4058.878056, 11660394496ull},
                        Case{"bert48-8gpu", 3966.439371, 11777736704ull}}) {
    SCOPED_TRACE(c.job);
    JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/" + c.job + ".json");
    if (job.cluster.device.preset == "v100-32g") job.cluster.device.link_gbps = 2400;  // rtx2080ti's is as it was
    PreparedJob p = prepare_job(job);
    SimResult r = simulate(p.sim_input());
    EXPECT_NEAR(r.iteration_time_ms, c.iteration_ms, 1e-6);
    EXPECT_EQ(p.plan.predicted.at(0).peak_memory_bytes, c.stage0_peak);
    EXPECT_EQ(r.tensor, 1);
    for (const auto& s : r.stages) EXPECT_EQ(s.tensor_ms, 0);
  }
}

TEST(TensorSim, AllReducesBlockTheComputeStreamAndAreNotBusy) {
  auto d = gpt_job(4);
  d["pipeline"]["stages"] = 2;
  PreparedJob p = prepare_job(parse_job(d));
  Collect c;
  SimResult r = simulate(p.sim_input(), &c);
  EXPECT_EQ(r.tensor, 4);
  EXPECT_EQ(r.replicas, 1);
  std::vector<double> tensor_ms(2, 0), busy_ms(2, 0);
  int forwards = 0, tensor_events = 0;
  for (std::size_t i = 0; i < c.all.size(); ++i) {
    const Event& e = c.all[i];
    if (is_busy(e.kind)) busy_ms[e.stage] += (e.end_ns - e.start_ns) / 1e6;
    if (e.kind == EventKind::Forward) ++forwards;
    if (e.kind != EventKind::TensorAllReduce) continue;
    ++tensor_events;
    tensor_ms[e.stage] += (e.end_ns - e.start_ns) / 1e6;
    EXPECT_GT(e.bytes, 0);
    // Right after the compute it belongs to, on the same stage and microbatch.
    ASSERT_GT(i, 0u);
    const Event& prev = c.all[i - 1];
    EXPECT_TRUE(is_busy(prev.kind));
    EXPECT_EQ(prev.end_ns, e.start_ns);
    EXPECT_EQ(prev.microbatch, e.microbatch);
  }
  EXPECT_EQ(tensor_events, 2 * forwards);  // one after every forward, one after every backward
  for (int s = 0; s < 2; ++s) {
    EXPECT_NEAR(tensor_ms[s], r.stages[s].tensor_ms, 1e-6);
    EXPECT_NEAR(busy_ms[s], r.stages[s].busy_ms, 1e-6);
  }
  EXPECT_EQ(lane_of(EventKind::TensorAllReduce), EventLane::Compute);
  EXPECT_FALSE(is_busy(EventKind::TensorAllReduce));
  EXPECT_FALSE(is_compute(EventKind::TensorAllReduce));
  EXPECT_TRUE(is_communication(EventKind::TensorAllReduce));
  EXPECT_STREQ(to_string(EventKind::TensorAllReduce), "tensor_allreduce");
  EXPECT_EQ(event_kind_from_string("tensor_allreduce"), EventKind::TensorAllReduce);
}

TEST(TensorSearch, PlannerSearchesTensorInsideANode) {
  auto d = gpt_job();
  d["parallel"] = {{"tensor", "auto"}};
  d["pipeline"] = {{"schedule", "1f1b"}};
  d["cluster"] = {{"devices", 16}, {"device", "a100-80g"}, {"gpus_per_node", 4}};
  d["training"] = {{"batch_size", 64}, {"microbatch_size", 2}};
  PreparedJob p = prepare_job(parse_job(d));
  std::set<int> tried;
  double best = 1e300;
  for (const auto& row : p.plan.parallel_search) {
    tried.insert(row.tensor);
    EXPECT_EQ(4 % row.tensor, 0) << row.tensor;  // inside a node of 4
    if (row.iteration_time_ms > 0) EXPECT_LE(row.tensor * row.stages * row.replicas, 16);
    if (row.feasible && row.iteration_time_ms > 0) best = std::min(best, row.iteration_time_ms);
  }
  EXPECT_EQ(tried, (std::set<int>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(p.plan.iteration_time_ms, best);
  EXPECT_FALSE(p.job.parallel.tensor_auto);
  EXPECT_EQ(p.plan.tensor_parallel, p.job.parallel.tensor);
  EXPECT_EQ(p.job.parallel.tensor * p.job.pipeline.stages * p.job.parallel.data, 16);
  // The plan's JSON says the split, and a row pinned alone plans the same.
  auto j = to_json(p.plan);
  EXPECT_EQ(j["parallel"]["tensor"], p.job.parallel.tensor);
  EXPECT_EQ(plan_from_json(j).tensor_parallel, p.job.parallel.tensor);
  for (const auto& row : p.plan.parallel_search) {
    if (row.iteration_time_ms <= 0) continue;
    auto pinned = gpt_job(row.tensor);
    pinned["cluster"] = d["cluster"];
    pinned["training"] = d["training"];
    pinned["pipeline"]["stages"] = row.stages;
    pinned["parallel"]["data"] = row.replicas;
    EXPECT_NEAR(prepare_job(parse_job(pinned)).plan.iteration_time_ms, row.iteration_time_ms, 1e-9)
        << row.tensor << " " << row.stages;
  }
}

TEST(TensorSim, ExplainCountsTheAllReducesAsTensorSyncNotComputeNorIdle) {
  auto d = gpt_job(2);
  d["pipeline"]["stages"] = 2;
  PreparedJob p = prepare_job(parse_job(d));
  Collect c;
  SimResult r = simulate(p.sim_input(), &c);
  std::vector<std::int64_t> tensor_ns(2, 0), compute_ns(2, 0);
  for (const Event& e : c.all) {
    if (e.kind == EventKind::TensorAllReduce) tensor_ns[e.stage] += e.end_ns - e.start_ns;
    if (is_compute(e.kind)) compute_ns[e.stage] += e.end_ns - e.start_ns;
  }
  Attribution a = attribute_idle(c.all);
  ASSERT_EQ(a.iterations, 1);
  for (const StageIteration& it : a.stage_iterations) {
    SCOPED_TRACE(it.stage);
    EXPECT_GT(tensor_ns[it.stage], 0);
    EXPECT_EQ(it.cause_ns[static_cast<int>(IdleCause::TensorSync)], tensor_ns[it.stage]);
    EXPECT_EQ(it.compute_ns, compute_ns[it.stage]);
    std::int64_t sum = it.compute_ns;
    for (auto ns : it.cause_ns) sum += ns;
    EXPECT_EQ(sum, it.wall_ns());  // compute + causes = wall, to the nanosecond
  }
  EXPECT_STREQ(to_string(IdleCause::TensorSync), "tensor_sync");
  (void)r;
}

TEST(TensorSearch, PlannersTurnRecomputedAttentionSelectiveWhereItFits) {
  // Memory from what only full recomputation fits to what keeps it all:
  // somewhere between, a tensor-parallel plan keeps recomputed attention
  // blocks but their core (faster than recomputing them, and fitting);
  // without tensor parallelism the planners' policies are as they were.
  int selective_plans = 0;
  for (double gb = 0.5; gb <= 3.0; gb += 0.125) {
    for (int t : {1, 2}) {
      auto d = gpt_job(t);
      d["pipeline"] = {{"stages", 2}, {"schedule", "1f1b"}, {"planner", "vpipe"}};
      d["cluster"]["memory_gb"] = gb;
      d["training"] = {{"batch_size", 32}, {"microbatch_size", 4}};
      PreparedJob p = prepare_job(parse_job(d));
      const auto n = std::count(p.plan.policy.begin(), p.plan.policy.end(), MemoryPolicy::Selective);
      if (t == 1) {
        EXPECT_EQ(n, 0) << gb;
        continue;
      }
      if (n == 0 || !p.plan.feasible) continue;
      ++selective_plans;
      SimResult r = simulate(p.sim_input());
      EXPECT_TRUE(r.feasible) << gb << ": " << r.reason;
      for (int l = 0; l < p.profile.size(); ++l)
        if (p.plan.policy[l] == MemoryPolicy::Selective) EXPECT_EQ(p.profile.layers[l].type, "attention");
      // The same plan with those blocks fully recomputed is slower.
      Plan full = p.plan;
      for (auto& pol : full.policy)
        if (pol == MemoryPolicy::Selective) pol = MemoryPolicy::Recompute;
      SimInput in = p.sim_input();
      in.plan = &full;
      EXPECT_LT(r.iteration_time_ms, simulate(in).iteration_time_ms) << gb;
    }
  }
  EXPECT_GT(selective_plans, 0);
}

// A profile measured at t = 1 planned at t = 2 (issue 40): its attention
// and FFN blocks priced as shards by the analytic rule, so the analytic
// profile at t = 1, taken as measured, splits into the analytic profile at
// t = 2 (its blocks' times and all-reduces); the embedding and head, which
// the analytic model splits by vocabulary, stay whole. The note says what
// is measured and what modelled (test_measured_tensor.cpp: by hand).
TEST(TensorProfile, AMeasuredProfileSplitsItsBlocksAsTheAnalyticModel) {
  JobSpec job = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/tiny-gpt-tp2.json");
  ASSERT_EQ(job.parallel.tensor, 2);
  JobSpec at1 = job;
  at1.parallel.tensor = 1;
  ModelProfile measured = analytic_profile(at1);
  measured.source = "measured";
  measured.device = job.cluster.device.preset;
  const std::string file = ::testing::TempDir() + "/pw-tp-measured.json";
  save_profile_file(measured, file);
  const ModelProfile analytic = analytic_profile(job);
  job.model.profile = file;
  const ModelProfile split = job_profile(job);
  ASSERT_EQ(split.size(), analytic.size());
  int blocks = 0;
  for (int l = 0; l < split.size(); ++l) {
    const LayerProfile &s = split.layers[l], &a = analytic.layers[l], &m = measured.layers[l];
    SCOPED_TRACE(s.name);
    if (s.type == "attention" || s.type == "ffn") {
      ++blocks;
      EXPECT_NEAR(s.fwd_ms, a.fwd_ms, 1e-9 * a.fwd_ms);
      EXPECT_NEAR(s.bwd_ms, a.bwd_ms, 1e-9 * a.bwd_ms);
      EXPECT_NEAR(s.tensor_fwd_ms, a.tensor_fwd_ms, 1e-12);
      EXPECT_NEAR(s.tensor_bwd_ms, a.tensor_bwd_ms, 1e-12);
      EXPECT_GT(s.tensor_fwd_ms, 0.0);
    } else {
      EXPECT_DOUBLE_EQ(s.fwd_ms, m.fwd_ms);
      EXPECT_DOUBLE_EQ(s.bwd_ms, m.bwd_ms);
    }
  }
  EXPECT_GT(blocks, 0);
  const auto& notes = split.assumptions;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("parallel.tensor = 2 with a measured profile: measured (t = 1) are") != std::string::npos;
  }));
  EXPECT_FALSE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("is not priced") != std::string::npos;
  }));
  job.parallel.tensor = 1;
  const auto whole = job_profile(job).assumptions;
  EXPECT_FALSE(std::any_of(whole.begin(), whole.end(), [](const std::string& n) {
    return n.find("parallel.tensor") != std::string::npos;
  }));
  std::remove(file.c_str());
}
