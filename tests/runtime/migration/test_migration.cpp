// Live migration must not change the numbers: with flush schedules and
// per-layer modules, a run whose layers move between stages at iteration
// boundaries computes what a plain single-process loop computes (the
// independent reference below), and bitwise what a run with the final
// partition from the start computes.
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <fstream>

#include "core/spec/spec_error.h"
#include "reference_loop.h"
#include "run_helpers.h"
#include "runtime/data.h"
#include "runtime/layers.h"

namespace pw::rt {
namespace {
using namespace testing;


Plan plan_of(const nlohmann::json& doc, std::vector<std::pair<int, int>> r) {
  Plan p = uniform_partition(doc["model"]["widths"].size() + 1, static_cast<int>(r.size()));
  for (size_t i = 0; i < r.size(); ++i) p.stages[i] = {r[i].first, r[i].second};
  return p;
}

nlohmann::json read_json(const std::string& f) {
  std::ifstream in(f);
  return nlohmann::json::parse(in);
}

struct Case {
  const char* name;
  int stages, microbatches, iterations;
  std::vector<int> widths;
  std::vector<std::pair<int, int>> initial;
  std::vector<std::pair<std::int64_t, std::vector<std::pair<int, int>>>> moves;
  // cluster.messaging: ordered posts the state exchange, like the stages'
  // traffic, in an order both ends share (tags ignored, as under NCCL).
  const char* messaging = "tagged";
};

class LiveMigration : public ::testing::TestWithParam<Case> {};

TEST_P(LiveMigration, SameWeightsAsReferenceAndAsTheFinalPartition) {
  const Case& c = GetParam();
  auto doc = mlp_job(c.stages, c.microbatches, "1f1b", c.widths, c.iterations);
  doc["cluster"]["messaging"] = c.messaging;
  auto script = nlohmann::json::array();
  for (auto& [it, r] : c.moves) script.push_back({{"iteration", it}, {"stages", ranges(r)}});
  auto migrating = doc;
  migrating["runtime"] = {{"migrate", script}};

  std::string dir = temp_dir("mig");
  auto opt = options(migrating, dir);
  opt.plan = plan_of(doc, c.initial);
  RunResult run = run_job(opt);
  ASSERT_EQ(run.exit_code, 0) << run.error;

  auto report = read_json(dir + "/migration.json");
  ASSERT_EQ(report["migrations"].size(), c.moves.size());
  for (size_t i = 0; i < c.moves.size(); ++i) {
    EXPECT_EQ(report["migrations"][i]["iteration"], c.moves[i].first);
    EXPECT_GT(report["migrations"][i]["moves"].size(), 0u);
    EXPECT_GT(report["migrations"][i]["bytes"].get<std::int64_t>(), 0);
  }
  EXPECT_EQ(run.plan.stages.back().first_layer, c.moves.back().second.back().first);

  // Independent reference: one process, no pipeline.
  Reference ref = reference_loop(parse_job(doc));
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
  auto w = run_weights(dir, c.stages);
  ASSERT_EQ(w.size(), ref.weights.size());
  for (size_t i = 0; i < w.size(); ++i) {
    double scale = ref.weights[i].abs().max().item<double>();
    EXPECT_LE((w[i] - ref.weights[i]).abs().max().item<double>(), 1e-5 * scale) << "parameter " << i;
  }

  // The final partition from the start: bitwise the same.
  std::string dir2 = temp_dir("mig-static");
  auto opt2 = options(doc, dir2);
  opt2.plan = plan_of(doc, c.moves.back().second);
  RunResult fixed = run_job(opt2);
  ASSERT_EQ(fixed.exit_code, 0) << fixed.error;
  EXPECT_EQ(fixed.losses, run.losses);
  auto w2 = run_weights(dir2, c.stages);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(w[i].equal(w2[i])) << "parameter " << i;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir2);
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, LiveMigration,
    ::testing::Values(
        // Layers move forward (0 -> 1), then back (1 -> 0).
        Case{"two_stages_both_ways", 2, 4, 5, {32, 32, 32}, {{0, 1}, {2, 3}},
             {{2, {{0, 0}, {1, 3}}}, {3, {{0, 2}, {3, 3}}}}},
        // Before the first iteration and before the last one.
        Case{"first_and_last_iteration", 2, 2, 4, {32, 32, 32}, {{0, 1}, {2, 3}},
             {{0, {{0, 2}, {3, 3}}}, {3, {{0, 0}, {1, 3}}}}},
        Case{"four_stages", 4, 4, 4, {32, 32, 32, 32, 32}, {{0, 0}, {1, 2}, {3, 3}, {4, 5}},
             {{2, {{0, 1}, {2, 2}, {3, 4}, {5, 5}}}}},
        // The four-stage move (layer 1 to stage 0, layer 4 to stage 2) under ordered messaging.
        Case{"four_stages_ordered", 4, 4, 4, {32, 32, 32, 32, 32}, {{0, 0}, {1, 2}, {3, 3}, {4, 5}},
             {{2, {{0, 1}, {2, 2}, {3, 4}, {5, 5}}}}, "ordered"}),
    [](const auto& info) { return std::string(info.param.name); });

// A mismatch must be detectable: a migration that dropped the optimizer
// state would differ from the reference; here another learning rate does.
TEST(LiveMigrationCheck, ReferenceDetectsADifferentRun) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 3);
  doc["runtime"] = {{"migrate", {{{"iteration", 1}, {"stages", ranges({{0, 0}, {1, 3}})}}}}};
  std::string dir = temp_dir("mig-neg");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  doc["training"]["lr"] = 0.011;
  Reference ref = reference_loop(parse_job(doc));
  auto w = run_weights(dir, 2);
  EXPECT_GT((w[0] - ref.weights[0]).abs().max().item<double>(), 1e-6);
  std::filesystem::remove_all(dir);
}

// A worker that dies after sending its layers and before the commit: the
// run fails, the message names the stage and the migration, the last
// checkpoint (written before the migration) is intact and loads.
TEST(LiveMigrationFailure, WorkerKilledMidMigrationFailsCleanly) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 6);
  doc["runtime"] = {{"migrate", {{{"iteration", 3}, {"stages", ranges({{0, 0}, {1, 3}})}}}},
                    {"fail_in_migration", 0}};
  std::string dir = temp_dir("mig-kill");
  auto opt = options(doc, dir);
  opt.plan = plan_of(doc, {{0, 1}, {2, 3}});
  opt.checkpoint_every = 1;
  RunResult run = run_job(opt);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.error.find("stage 0"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("killed by signal 9"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("live migration to plan version 1 at iteration 3"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("not committed"), std::string::npos) << run.error;
  // The coordinator may not yet have recorded the last checkpoint when the worker died.
  EXPECT_GE(read_json(dir + "/checkpoint/meta.json")["iteration"].get<int>(), 2);
  // The checkpoint holds the old partition: stage 0 has layers 0-1 (4 tensors).
  std::string ckpt = dir + "/" + read_json(dir + "/checkpoint/meta.json")["dir"].get<std::string>();
  EXPECT_EQ(load_stage_parameters(ckpt + "/stage0.pt").size(), 4u);
  EXPECT_EQ(load_stage_parameters(ckpt + "/stage1.pt").size(), 4u);
  EXPECT_EQ(plan_from_json(read_json(ckpt + "/plan.json")).stages[1].first_layer, 2);
  std::filesystem::remove_all(dir);
}

// Memory policies change online through the same switch, and never change
// the numbers: keep -> recompute/swap mid-run ends bitwise where an all-keep
// run ends; the switch is reported with its policy changes; the stage's
// memory account after the switch does not still count the old stage.
TEST(LiveMigration, MemoryPoliciesChangeOnline) {
  auto doc = mlp_job(2, 4, "1f1b", {64, 64, 64}, 5);
  auto changing = doc;
  changing["runtime"] = {{"migrate", {{{"iteration", 2}, {"policy", {"recompute", "swap", "recompute", "keep"}}}}}};
  std::string a = temp_dir("pol-online"), b = temp_dir("pol-keep");
  auto opt = options(changing, a);
  opt.plan = plan_of(doc, {{0, 1}, {2, 3}});
  RunResult run = run_job(opt);
  ASSERT_EQ(run.exit_code, 0) << run.error;
  auto rep = read_json(a + "/migration.json");
  ASSERT_EQ(rep["migrations"].size(), 1u) << rep.dump();
  EXPECT_EQ(rep["migrations"][0]["moves"].size(), 0u);
  ASSERT_EQ(rep["migrations"][0]["policy_changes"].size(), 3u) << rep.dump();
  EXPECT_EQ(rep["migrations"][0]["policy_changes"][1][2], "swap");
  EXPECT_EQ(run.plan.policy[0], MemoryPolicy::Recompute);

  auto keep = options(doc, b);
  keep.plan = plan_of(doc, {{0, 1}, {2, 3}});
  RunResult fixed = run_job(keep);
  ASSERT_EQ(fixed.exit_code, 0) << fixed.error;
  EXPECT_EQ(fixed.losses, run.losses);
  auto w = run_weights(a, 2), w2 = run_weights(b, 2);
  ASSERT_EQ(w.size(), w2.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(w[i].equal(w2[i])) << "parameter " << i;
  // Parameters and optimizer state are the same tensors after the switch;
  // the activations part can only shrink (recompute/swap), never hide
  // behind a baseline that still counted the old stage (it would go < 0).
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(run.stages[r]["params_bytes"], fixed.stages[r]["params_bytes"]) << "stage " << r;
    EXPECT_GE(run.stages[r]["peak_bytes"].get<std::int64_t>(), run.stages[r]["params_bytes"].get<std::int64_t>())
        << "stage " << r;
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

// A checkpoint taken after a migration holds the migrated partition; a run
// resumed from it continues on that partition and ends bitwise where the
// uninterrupted run ends.
TEST(LiveMigrationResume, ResumesOnTheMigratedPartition) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 6);
  doc["runtime"] = {{"migrate", {{{"iteration", 2}, {"stages", ranges({{0, 0}, {1, 3}})}}}}};
  std::string a = temp_dir("mig-ckpt"), b = temp_dir("mig-resumed");
  auto opt = options(doc, a);
  opt.plan = plan_of(doc, {{0, 1}, {2, 3}});
  opt.checkpoint_every = 4;
  RunResult full = run_job(opt);
  ASSERT_EQ(full.exit_code, 0) << full.error;
  auto meta = read_json(a + "/checkpoint/meta.json");
  ASSERT_EQ(meta["iteration"], 4);
  EXPECT_EQ(plan_from_json(read_json(a + "/" + meta["dir"].get<std::string>() + "/plan.json")).stages[1].first_layer, 1);

  auto again = options(doc, b);
  again.resume_dir = a;
  RunResult resumed = run_job(again);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.error;
  EXPECT_EQ(resumed.start_iteration, 4);
  EXPECT_EQ(resumed.plan.stages[1].first_layer, 1);
  ASSERT_EQ(resumed.losses.size(), 2u);
  EXPECT_EQ(resumed.losses[1], full.losses[5]);
  auto wa = run_weights(a, 2), wb = run_weights(b, 2);
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(wa[i].equal(wb[i])) << "parameter " << i;
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

// A manual request re-plans with the measured slowdown and applies the plan
// even when the automatic trigger's gain threshold would keep the old one.
TEST(LiveMigrationCheck, ManualRebalanceMovesLayersOffASlowStage) {
  // Enough iterations for the proposal to reach the workers on a loaded machine.
  auto doc = mlp_job(2, 4, "1f1b", {32, 32, 32}, 30);
  doc["runtime"] = {{"slowdown", {1, 4}},
                    {"replan", {{"min_gain", 100}, {"rebalance_at", 2}, {"cooldown_iterations", 100}}}};
  std::string dir = temp_dir("mig-manual");
  auto opt = options(doc, dir);
  opt.plan = plan_of(doc, {{0, 1}, {2, 3}});
  RunResult run = run_job(opt);
  ASSERT_EQ(run.exit_code, 0) << run.error;
  auto rep = read_json(dir + "/migration.json");
  ASSERT_EQ(rep["migrations"].size(), 1u) << rep.dump();
  EXPECT_EQ(rep["migrations"][0]["reason"], "manual");
  EXPECT_GE(rep["migrations"][0]["iteration"].get<int>(), 3);
  // The slow stage 1 ends with fewer layers.
  EXPECT_GT(run.plan.stages[1].first_layer, 2) << rep["final_plan"].dump();
  std::filesystem::remove_all(dir);
}

TEST(LiveMigrationFailure, AsyncPipeDreamIsRefused) {
  auto doc = mlp_job(2, 2, "pipedream", {32, 32, 32}, 3);
  doc["runtime"] = {{"migrate", {{{"iteration", 1}, {"stages", ranges({{0, 0}, {1, 3}})}}}}};
  // Refused when the job is read (every command alike), before any worker starts.
  try {
    run_job(options(doc, ""));
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "runtime");
    EXPECT_NE(std::string(e.what()).find("flush"), std::string::npos) << e.what();
  }
}

TEST(LiveMigrationFailure, BadRuntimeSectionNamesTheField) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 3);
  doc["runtime"] = {{"slowdown", {1, 2, 3}}};
  try {
    run_job(options(doc, ""));
    FAIL() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("runtime.slowdown"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pw::rt
