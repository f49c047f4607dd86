// Costs that know the microbatch: the affine fit, the per-size tables,
// profile files with and without them, and the microbatch search.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/calibrate/microbatch_calibration.h"
#include "core/model/microbatch_curve.h"
#include "core/model/microbatch_profile.h"
#include "core/job/job_plan.h"
#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"
#include "core/model/profile_retarget.h"
#include "core/plan/microbatch_search.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

TEST(MicrobatchCurve, TheFitRecoversAlphaAndBetaFromAnExactTable) {
  const double alpha = 0.37, beta = 0.081;
  std::vector<SizedTime> t;
  for (int b : {1, 2, 4, 8, 16, 32}) t.push_back({double(b), alpha + beta * b});
  AffineTime f = fit_affine(t);
  EXPECT_NEAR(f.alpha_ms, alpha, 1e-12);
  EXPECT_NEAR(f.beta_ms, beta, 1e-12);
}

TEST(MicrobatchCurve, TheFitRecoversAlphaAndBetaFromANoisyTable) {
  // Symmetric noise +-5% around the line at sizes 1..32: least squares
  // lands within a few percent of both (the closed form of the normal equations).
  const double alpha = 2.0, beta = 0.5;
  std::vector<SizedTime> t;
  int k = 0;
  for (int b : {1, 2, 4, 8, 16, 32}) t.push_back({double(b), (alpha + beta * b) * (k++ % 2 ? 1.05 : 0.95)});
  AffineTime f = fit_affine(t);
  EXPECT_NEAR(f.alpha_ms, alpha, 0.1 * alpha);
  EXPECT_NEAR(f.beta_ms, beta, 0.05 * beta);
}

TEST(MicrobatchCurve, NegativeTermsAreNoiseNotADevice) {
  // Decreasing per-size times: no negative slope, the flat mean.
  AffineTime flat = fit_affine({{1, 3.0}, {2, 2.0}});
  EXPECT_EQ(flat.beta_ms, 0);
  EXPECT_DOUBLE_EQ(flat.alpha_ms, 2.5);
  // Superlinear times: no negative intercept, the proportional line.
  AffineTime prop = fit_affine({{1, 1.0}, {2, 4.0}});
  EXPECT_EQ(prop.alpha_ms, 0);
  EXPECT_DOUBLE_EQ(prop.beta_ms, (1.0 + 8.0) / 5.0);
  EXPECT_DOUBLE_EQ(fit_affine({{4, 2.0}}).beta_ms, 0.5);
}

TEST(MicrobatchCurve, PiecewiseLinearBetweenSizesAffineBeyond) {
  std::vector<SizedTime> t{{2, 1.0}, {4, 1.5}, {8, 3.5}};
  EXPECT_DOUBLE_EQ(time_at_microbatch(t, 2), 1.0);
  EXPECT_DOUBLE_EQ(time_at_microbatch(t, 3), 1.25);
  EXPECT_DOUBLE_EQ(time_at_microbatch(t, 6), 2.5);
  // Beyond: the table's least-squares slope from the last point.
  const double slope = fit_affine(t).beta_ms;
  EXPECT_DOUBLE_EQ(time_at_microbatch(t, 16), 3.5 + slope * 8);
  // Below: never cheaper per sample than the smallest size measured.
  EXPECT_GE(time_at_microbatch(t, 1), 0.5);
  EXPECT_LE(time_at_microbatch(t, 1), 1.0);
}

ModelProfile two_layer_profile() {
  ModelProfile p;
  p.microbatch_size = 4;
  p.source = "measured";
  LayerProfile a;
  a.name = "a";
  a.fwd_ms = 2.0;
  a.bwd_ms = 4.0;
  a.activation_bytes = 400;
  a.output_bytes = 40;
  a.param_bytes = 10;
  a.by_microbatch = {{1, 1.1, 2.0, -1}, {4, 2.0, 4.0, -1}, {16, 5.6, 12.0, -1}};
  LayerProfile b = a;
  b.name = "b";
  b.by_microbatch.clear();
  b.fwd_fixed_ms = 1.0;  // affine: alpha 1, beta (2 - 1) / 4
  b.bwd_fixed_ms = 0.0;  // linear
  p.layers = {a, b};
  return p;
}

TEST(MicrobatchScaling, ATableGivesTheMeasuredTimesAndInterpolates) {
  ModelProfile p = two_layer_profile();
  ModelProfile at16 = rescale_microbatch(p, 16);
  EXPECT_DOUBLE_EQ(at16.layers[0].fwd_ms, 5.6);
  EXPECT_DOUBLE_EQ(at16.layers[0].bwd_ms, 12.0);
  ModelProfile at8 = rescale_microbatch(p, 8);
  EXPECT_DOUBLE_EQ(at8.layers[0].fwd_ms, 2.0 + (5.6 - 2.0) * 4 / 12);
  // Bytes stay linear in the microbatch.
  EXPECT_EQ(at8.layers[0].activation_bytes, 800u);
  EXPECT_EQ(at8.layers[0].param_bytes, 10u);
  EXPECT_NE(at8.assumptions.back().find("from the sizes measured"), std::string::npos);
}

TEST(MicrobatchScaling, WithoutATableTheFixedPartStays) {
  ModelProfile p = two_layer_profile();
  ModelProfile at1 = rescale_microbatch(p, 1);
  EXPECT_DOUBLE_EQ(at1.layers[1].fwd_ms, 1.0 + 0.25);  // alpha + beta
  EXPECT_DOUBLE_EQ(at1.layers[1].bwd_ms, 1.0);         // linear: 4 / 4
}

TEST(MicrobatchScaling, AnOldProfileScalesLinearlyAndSaysSo) {
  ModelProfile p = two_layer_profile();
  for (auto& l : p.layers) l.by_microbatch.clear(), l.fwd_fixed_ms = 0;
  ModelProfile at2 = rescale_microbatch(p, 2);
  EXPECT_DOUBLE_EQ(at2.layers[0].fwd_ms, 1.0);
  EXPECT_NE(at2.assumptions.back().find("no per-microbatch term"), std::string::npos);
}

TEST(ProfileFile, Version1LoadsUnchanged) {
  const std::string v1 = R"({"format": "pipewright-profile", "version": 1, "microbatch_size": 8, "device": "cpu",
    "source": "measured", "layers": [
      {"name": "l0", "type": "linear", "fwd_ms": 1.5, "bwd_ms": 3.0, "activation_bytes": 100, "input_bytes": 10,
       "output_bytes": 20, "param_bytes": 30, "optimizer_bytes": 60, "optimizer_ms": 0.2}]})";
  ModelProfile p = profile_from_json(nlohmann::json::parse(v1));
  ASSERT_EQ(p.size(), 1);
  EXPECT_EQ(p.microbatch_size, 8);
  EXPECT_DOUBLE_EQ(p.layers[0].fwd_ms, 1.5);
  EXPECT_DOUBLE_EQ(p.layers[0].bwd_ms, 3.0);
  EXPECT_DOUBLE_EQ(p.layers[0].optimizer_ms, 0.2);
  EXPECT_EQ(p.layers[0].activation_bytes, 100u);
  EXPECT_TRUE(p.layers[0].by_microbatch.empty());
  EXPECT_EQ(p.layers[0].fwd_fixed_ms, 0);
  EXPECT_FALSE(p.has_microbatch_tables());
}

TEST(ProfileFile, Version2RoundTripsTheTables) {
  ModelProfile p = two_layer_profile();
  p.layers[0].param_tensors = 2;
  p.layers[0].by_microbatch[1].bwd_weight_ms = 1.5;
  nlohmann::json j = profile_to_json(p);
  EXPECT_EQ(j["version"], 2);
  ModelProfile q = profile_from_json(j);
  ASSERT_EQ(q.layers[0].by_microbatch.size(), 3u);
  EXPECT_DOUBLE_EQ(q.layers[0].by_microbatch[2].fwd_ms, 5.6);
  EXPECT_DOUBLE_EQ(q.layers[0].by_microbatch[1].bwd_weight_ms, 1.5);
  EXPECT_LT(q.layers[0].by_microbatch[0].bwd_weight_ms, 0);
  EXPECT_DOUBLE_EQ(q.layers[1].fwd_fixed_ms, 1.0);
  EXPECT_EQ(q.layers[0].param_tensors, 2);
  EXPECT_TRUE(q.has_microbatch_tables());
}

TEST(ProfileFile, ATableOutOfOrderIsRefused) {
  nlohmann::json j = profile_to_json(two_layer_profile());
  std::swap(j["layers"][0]["by_microbatch"][0], j["layers"][0]["by_microbatch"][1]);
  EXPECT_THROW(profile_from_json(j), std::runtime_error);
}

nlohmann::json gpt_job(const std::string& device, const nlohmann::json& microbatch, int batch = 32) {
  nlohmann::json j = nlohmann::json::parse(R"({"name": "g", "model": {"kind": "gpt", "layers": 8, "hidden": 1024,
      "heads": 16, "seq_len": 512, "vocab": 32000},
    "training": {"iterations": 1}, "cluster": {"devices": 4}, "pipeline": {"stages": 4, "planner": "vpipe"}})");
  j["training"]["batch_size"] = batch;
  j["training"]["microbatch_size"] = microbatch;
  j["cluster"]["device"] = device;
  return j;
}

TEST(AnalyticCosts, PresetsChargeAFixedPartPerMicrobatch) {
  // a100: one sample costs (1 + penalty) x its share of a large microbatch,
  // plus the layer's dispatch (DeviceSpec, docs/planners.md).
  const DeviceSpec a100 = *device_preset("a100-80g");
  const LayerProfile attn1 = analytic_profile(parse_job(gpt_job("a100-80g", 1))).layers[1];
  const LayerProfile attn16 = analytic_profile(parse_job(gpt_job("a100-80g", 16))).layers[1];
  ASSERT_EQ(attn1.type, "attention");
  // Independently: the block's forward FLOPs per sample over the preset's rate.
  const double s = 512, h = 1024, flops = s * (8 * h * h + 4 * s * h);
  const double beta = flops / (a100.tflops * 1e12) * 1e3;
  const double dispatch = a100.layer_dispatch_us * 1e-3;
  EXPECT_NEAR(attn1.fwd_ms, (1 + a100.small_batch_penalty) * beta + dispatch, 1e-9);
  EXPECT_NEAR(attn1.fwd_fixed_ms, a100.small_batch_penalty * beta + dispatch, 1e-9);
  EXPECT_NEAR(attn16.fwd_ms, 16 * beta + a100.small_batch_penalty * beta + dispatch, 1e-9);
  // The optimizer step pays per tensor: 10 in an attention block (4 weights, 4 biases, a norm's 2).
  nlohmann::json free_tensors = gpt_job("a100-80g", 1);
  free_tensors["cluster"]["optimizer_tensor_us"] = 0;
  const LayerProfile no_tensor_cost = analytic_profile(parse_job(free_tensors)).layers[1];
  EXPECT_NEAR(attn1.optimizer_ms - no_tensor_cost.optimizer_ms, 10 * a100.optimizer_tensor_us * 1e-3, 1e-12);
}

TEST(AnalyticCosts, ACustomDeviceIsLinearUnlessToldOtherwise) {
  nlohmann::json j = gpt_job("custom", 1);
  j["cluster"]["memory_gb"] = 80;
  j["cluster"]["tflops"] = 100;
  const LayerProfile l1 = analytic_profile(parse_job(j)).layers[1];
  j["training"]["microbatch_size"] = 8;
  const LayerProfile l8 = analytic_profile(parse_job(j)).layers[1];
  EXPECT_NEAR(l8.fwd_ms, 8 * l1.fwd_ms, 1e-12);
  EXPECT_EQ(l1.fwd_fixed_ms, 0);
}

TEST(MicrobatchSearch, CandidatesAreDivisorsThePowersOfTwoOrWhatTheScheduleRuns) {
  JobSpec j = parse_job(gpt_job("a100-80g", "auto", 12));
  EXPECT_EQ(microbatch_candidates(j), (std::vector<int>{1, 2, 3, 4, 6, 12}));
  j = parse_job(gpt_job("a100-80g", "auto", 48));
  EXPECT_EQ(microbatch_candidates(j), (std::vector<int>{1, 2, 4, 8, 16, 48}));
  nlohmann::json d = gpt_job("a100-80g", "auto", 48);
  d["pipeline"]["schedule"] = "dualpipe-v";
  EXPECT_EQ(microbatch_candidates(parse_job(d)), (std::vector<int>{1, 2, 4}));  // 48 / b >= 8
}

TEST(MicrobatchSearch, AutoIsTheFastestOfAFixedSizeSweep) {
  for (const std::string device : {"a100-80g", "rtx2080ti"}) {
    SCOPED_TRACE(device);
    PreparedJob chosen = prepare_job(parse_job(gpt_job(device, "auto")));
    // The sweep a user would run by hand: every size as a fixed job.
    double best = 1e300;
    int best_b = 0;
    for (int b : {1, 2, 4, 8, 16, 32}) {
      PreparedJob p = prepare_job(parse_job(gpt_job(device, b)));
      SimResult r = simulate(p.sim_input());
      if (r.feasible && r.iteration_time_ms <= best) best = r.iteration_time_ms, best_b = b;
    }
    ASSERT_GT(best_b, 0);
    SimResult r = simulate(chosen.sim_input());
    EXPECT_TRUE(r.feasible);
    // vpipe searches each size with a share of its budget: within 1% of the
    // full-budget sweep's best.
    EXPECT_LE(r.iteration_time_ms, best * 1.01);
    EXPECT_EQ(chosen.job.training.microbatch_size, chosen.plan.microbatch_size);
    EXPECT_EQ(chosen.job.pipeline.microbatches * chosen.job.training.microbatch_size, 32);
    EXPECT_EQ(chosen.job.raw["training"]["microbatch_size"], chosen.job.training.microbatch_size);
    EXPECT_EQ(chosen.plan.microbatch_search.size(), 6u);
    EXPECT_FALSE(chosen.job.training.microbatch_size_auto);
  }
}

// A host overhead given by size (cluster.action_overhead_us as a table):
// each candidate is planned with its own size's. Made prohibitive at the
// size auto chooses without it, the choice moves, and the chosen job
// carries its size's value.
TEST(MicrobatchSearch, EachSizeIsPlannedWithItsOwnHostOverhead) {
  nlohmann::json j = gpt_job("a100-80g", "auto");
  j["pipeline"]["planner"] = "uniform";
  const int plain = prepare_job(parse_job(j)).job.training.microbatch_size;
  nlohmann::json table = nlohmann::json::object();
  for (int b : {1, 2, 4, 8, 16, 32}) table[std::to_string(b)] = b == plain ? 1e6 : 10.0;  // 1 s per action at `plain`
  j["cluster"]["action_overhead_us"] = table;
  PreparedJob p = prepare_job(parse_job(j));
  EXPECT_NE(p.job.training.microbatch_size, plain);
  EXPECT_DOUBLE_EQ(p.job.cluster.device.action_overhead_us, 10.0);
  for (const auto& row : p.plan.microbatch_search)
    if (row.microbatch_size == plain && !row.pruned)  // every device runs at least one action: >= 1 s
      EXPECT_GE(row.iteration_time_ms, 1000.0);
  // The same job at the prohibitive size, fixed: it reads that size's value.
  j["training"]["microbatch_size"] = plain;
  EXPECT_DOUBLE_EQ(parse_job(j).cluster.device.action_overhead_us, 1e6);
}

TEST(MicrobatchSearch, TooLargeAMicrobatchIsNotChosen) {
  // 11 GB cards and a long sequence: whole-batch microbatches do not fit.
  nlohmann::json j = gpt_job("rtx2080ti", "auto", 64);
  j["model"]["seq_len"] = 2048;
  j["pipeline"]["planner"] = "uniform";
  PreparedJob p = prepare_job(parse_job(j));
  bool some_infeasible = false;
  for (const auto& row : p.plan.microbatch_search) some_infeasible |= !row.feasible && !row.pruned;
  EXPECT_TRUE(some_infeasible);
  EXPECT_TRUE(p.plan.feasible);
  for (const auto& row : p.plan.microbatch_search)
    if (row.microbatch_size == p.job.training.microbatch_size) EXPECT_TRUE(row.feasible);
}

TEST(MicrobatchSearch, SpecErrorsNameTheField) {
  nlohmann::json j = gpt_job("a100-80g", "auto");
  j["pipeline"]["microbatches"] = 4;
  try {
    parse_job(j);
    FAIL() << "accepted microbatches beside auto";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "pipeline.microbatches");
  }
  try {
    parse_job(gpt_job("a100-80g", "large"));
    FAIL() << "accepted a word";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "training.microbatch_size");
  }
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

// Four layers, a table at 2, 4 and 8 where every layer costs 0.1 + 0.05 b
// forward and twice that backward.
ModelProfile tabled_profile() {
  ModelProfile p;
  p.microbatch_size = 4;
  for (int l = 0; l < 4; ++l) {
    LayerProfile x;
    x.name = "l" + std::to_string(l);
    for (int b : {2, 4, 8}) x.by_microbatch.push_back({b, 0.1 + 0.05 * b, 0.2 + 0.1 * b, -1});
    x.fwd_ms = 0.3;
    x.bwd_ms = 0.6;
    x.optimizer_ms = 1.0;
    p.layers.push_back(x);
  }
  return p;
}

MeasuredStageCompute stage(int first, int last, int device, double fwd, double bwd, double opt) {
  MeasuredStageCompute m;
  m.range = {first, last};
  m.device = device;
  m.fwd_ms = fwd;
  m.bwd_ms = bwd;
  m.optimizer_ms = opt;
  m.microbatches = 10;
  return m;
}

TEST(InSituAtSizes, StageSumsEqualWhatEachSizeMeasuredAndTheFitFindsTheStagesAlpha) {
  // Stage 0 (layers 0-1) measured 1 + 0.2 b forward and 2 + 0.4 b backward:
  // a fixed millisecond per microbatch the isolated profile did not see.
  // Stage 1 measured exactly its profile.
  auto s0f = [](double b) { return 1.0 + 0.2 * b; };
  auto s0b = [](double b) { return 2.0 + 0.4 * b; };
  auto prof = [](double b) { return 2 * (0.1 + 0.05 * b); };  // two layers' forward
  std::map<int, std::vector<MeasuredStageCompute>> runs;
  for (int b : {2, 8}) runs[b] = {stage(0, 1, 0, s0f(b), s0b(b), 4.0), stage(2, 3, 1, prof(b), 2 * prof(b), 2.0)};
  std::vector<StageSizeFit> fits;
  ModelProfile c = calibrate_profile_at_sizes(tabled_profile(), runs, &fits);
  for (int b : {2, 8}) {
    ModelProfile at = rescale_microbatch(c, b);
    EXPECT_NEAR(at.layers[0].fwd_ms + at.layers[1].fwd_ms, s0f(b), 1e-12) << b;
    EXPECT_NEAR(at.layers[0].bwd_ms + at.layers[1].bwd_ms, s0b(b), 1e-12) << b;
    EXPECT_NEAR(at.layers[2].fwd_ms + at.layers[3].fwd_ms, prof(b), 1e-12) << b;
  }
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_NEAR(fits[0].fwd_fit.alpha_ms, 1.0, 1e-12);
  EXPECT_NEAR(fits[0].fwd_fit.beta_ms, 0.2, 1e-12);
  EXPECT_NEAR(fits[0].bwd_fit.alpha_ms, 2.0, 1e-12);
  // The profile's own size (4) lies between the runs: its time is the
  // table's, interpolated, and one scale factor would have missed it.
  EXPECT_NEAR(c.layers[0].fwd_ms, c.layers[0].by_microbatch[1].fwd_ms, 1e-12);
  // The optimizer: 4 ms measured over 2 ms profiled on device 0.
  EXPECT_NEAR(c.layers[0].optimizer_ms, 2.0, 1e-12);
  EXPECT_NEAR(c.layers[2].optimizer_ms, 1.0, 1e-12);
}

TEST(InSituAtSizes, RunsOfDifferentPartitionsAreRefused) {
  std::map<int, std::vector<MeasuredStageCompute>> runs;
  runs[2] = {stage(0, 1, 0, 1, 1, 1), stage(2, 3, 1, 1, 1, 1)};
  runs[8] = {stage(0, 0, 0, 1, 1, 1), stage(1, 3, 1, 1, 1, 1)};
  EXPECT_THROW(calibrate_profile_at_sizes(tabled_profile(), runs), std::invalid_argument);
}

TEST(MergeSizes, EveryLayerGetsARowPerSizeAndTheBaseKeepsItsFields) {
  ModelProfile a = tabled_profile(), b = tabled_profile();
  for (auto* p : {&a, &b})
    for (auto& l : p->layers) l.by_microbatch.clear();
  a.microbatch_size = 2;
  b.microbatch_size = 16;
  b.layers[1].fwd_ms = 7.0;
  b.layers[1].activation_bytes = 1600;
  ModelProfile m = merge_microbatch_profiles({b, a}, 16);
  EXPECT_EQ(m.microbatch_size, 16);
  ASSERT_EQ(m.layers[1].by_microbatch.size(), 2u);
  EXPECT_EQ(m.layers[1].by_microbatch[0].microbatch, 2);
  EXPECT_DOUBLE_EQ(m.layers[1].by_microbatch[1].fwd_ms, 7.0);
  EXPECT_EQ(m.layers[1].activation_bytes, 1600u);
  EXPECT_THROW(merge_microbatch_profiles({a, b}, 4), std::invalid_argument);
  b.layers[2].name = "other";
  EXPECT_THROW(merge_microbatch_profiles({a, b}, 16), std::invalid_argument);
}

}  // namespace
}  // namespace pw
