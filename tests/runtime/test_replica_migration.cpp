// Replicas of the pipeline (parallel.data) with what used to run one
// pipeline only (issue 39): live migration, where every replica moves the
// same layers at the same iteration and rebuilds its gradient buckets, and
// PipeDream's async schedule, where the replicas all-reduce each
// microbatch's gradient before its update. Each against an independent
// computation; replicas bitwise equal (their weight hashes).
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <fstream>
#include <map>

#include "core/spec/spec_error.h"
#include "pipedream_reference.h"
#include "reference_loop.h"
#include "run_helpers.h"
#include "runtime/data.h"
#include "runtime/layers.h"

namespace pw::rt {
namespace {
using namespace testing;

// 2 stages x 2 replicas of the test MLP (4 layers), 2 microbatches of 4 per
// replica: the global batch is 16 samples.
nlohmann::json replicated_mlp(const std::string& schedule, int microbatches, int iterations) {
  auto doc = mlp_job(2, microbatches, schedule, {32, 32, 32}, iterations);
  doc["training"]["batch_size"] = 2 * 4 * microbatches;
  doc["cluster"]["devices"] = 4;
  doc["pipeline"]["planner"] = "uniform";
  doc["parallel"] = {{"data", 2}};
  return doc;
}

Plan plan_of(std::vector<std::pair<int, int>> r) {
  Plan p = uniform_partition(4, static_cast<int>(r.size()));
  for (size_t i = 0; i < r.size(); ++i) p.stages[i] = {r[i].first, r[i].second};
  p.data_parallel = 2;
  return p;
}

// Each stage's replicas reported the same weight hash at the end.
void expect_replicas_agree(const RunResult& run, int stages, int replicas) {
  ASSERT_EQ(run.stages.size(), static_cast<size_t>(stages * replicas));
  std::map<int, std::string> hash_of_stage;
  for (const auto& s : run.stages) {
    ASSERT_TRUE(s.contains("weights_fnv1a")) << s.dump();
    const std::string h = s.at("weights_fnv1a").get<std::string>();
    auto [it, fresh] = hash_of_stage.emplace(s.at("stage").get<int>(), h);
    EXPECT_EQ(it->second, h) << "stage " << s.at("stage") << " replica " << s.at("replica");
  }
}

nlohmann::json read_json(const std::string& f) {
  std::ifstream in(f);
  return nlohmann::json::parse(in);
}

// Layers move forward (layer 1 to stage 1) at iteration 2 and back past the
// start (layer 1 and 2 to stage 0) at 3, in both replicas. The stages'
// arithmetic does not depend on where a layer runs, and a 2-way all-reduce
// is one addition whichever bucket a gradient is in: the run is bitwise the
// one that never migrates, and within rounding the single-process loop.
TEST(ReplicaMigration, EveryReplicaMovesTheSameLayersAndTrainsAsWithoutMigration) {
  auto doc = replicated_mlp("1f1b", 2, 5);
  auto migrating = doc;
  migrating["runtime"] = {{"migrate",
                           {{{"iteration", 2}, {"stages", ranges({{0, 0}, {1, 3}})}},
                            {{"iteration", 3}, {"stages", ranges({{0, 2}, {3, 3}})}}}}};
  std::string dir = temp_dir("dp-mig");
  auto opt = options(migrating, dir);
  opt.plan = plan_of({{0, 1}, {2, 3}});
  RunResult run = run_job(opt);
  ASSERT_EQ(run.exit_code, 0) << run.error;

  auto report = read_json(dir + "/migration.json");
  ASSERT_EQ(report["migrations"].size(), 2u);
  EXPECT_EQ(report["migrations"][0]["iteration"], 2);
  EXPECT_EQ(report["migrations"][1]["iteration"], 3);
  for (const auto& m : report["migrations"]) EXPECT_GT(m["bytes"].get<std::int64_t>(), 0);
  EXPECT_EQ(run.plan.stages[0].last_layer, 2);
  EXPECT_EQ(run.plan.data_parallel, 2);
  expect_replicas_agree(run, 2, 2);

  std::string dir2 = temp_dir("dp-mig-static");
  auto opt2 = options(doc, dir2);
  opt2.plan = plan_of({{0, 1}, {2, 3}});
  RunResult fixed = run_job(opt2);
  ASSERT_EQ(fixed.exit_code, 0) << fixed.error;
  EXPECT_EQ(fixed.losses, run.losses);
  auto w = run_weights(dir, 2), w2 = run_weights(dir2, 2);
  ASSERT_EQ(w.size(), w2.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(w[i].equal(w2[i])) << "parameter " << i;

  // Independent: one process, the global batch in the replicas' two shares.
  auto single = doc;
  single.erase("parallel");
  single["cluster"]["devices"] = 2;
  Reference ref = reference_loop(parse_job(single), {}, c10::kCPU, 2);
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_LE((w[i] - ref.weights[i]).abs().max().item<double>(), 1e-5 * ref.weights[i].abs().max().item<double>())
        << "parameter " << i;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir2);
}

TEST(ReplicaPipeDream, ReplicasAllReduceEveryMicrobatchBeforeItsUpdate) {
  constexpr int kIterations = 20;
  auto doc = replicated_mlp("pipedream", 4, kIterations);
  std::string dir = temp_dir("dp-pipedream");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  expect_replicas_agree(run, 2, 2);

  Reference ref = pipedream_reference(parse_job(doc), 2);
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
  auto w = run_weights(dir, 2);
  ASSERT_EQ(w.size(), ref.weights.size());
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_LE((w[i] - ref.weights[i]).abs().max().item<double>(), 1e-5 * ref.weights[i].abs().max().item<double>())
        << "parameter " << i;

  // Not vacuous: one replica's data alone (no all-reduce) trains otherwise.
  auto alone = doc;
  alone.erase("parallel");
  alone["cluster"]["devices"] = 2;
  alone["training"]["batch_size"] = 16;
  Reference one = pipedream_reference(parse_job(alone), 1);
  double diff = 0;
  for (size_t i = 0; i < w.size(); ++i) diff = std::max(diff, (w[i] - one.weights[i]).abs().max().item<double>());
  EXPECT_GT(diff, 1e-4);
  std::filesystem::remove_all(dir);
}

// What still cannot run: stages replicated unequally (the pipedream
// planner's per-stage replication over spare devices), refused before any
// worker starts, naming the plan's field and saying how to get a plan that runs.
TEST(ReplicaRefusal, UnequalPerStageReplicationIsRefusedNamingTheField) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 2);
  doc["cluster"]["devices"] = 3;
  auto opt = options(doc, temp_dir("dp-unequal"));
  Plan p = uniform_partition(4, 2);
  p.replicas = {2, 1};  // stage 0 on two workers, stage 1 on one
  opt.plan = p;
  try {
    run_job(opt);
    FAIL() << "a plan with unequal per-stage replication started";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "plan.stages[].replicas");
    EXPECT_NE(std::string(e.what()).find("set cluster.devices to pipeline.stages x parallel.data"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(opt.run_dir + "/events"));
}

}  // namespace
}  // namespace pw::rt
