// After a provoked slowdown of one stage the coordinator rebalances, and the
// throughput recovers to within 10% of the best static plan for the new
// conditions (found here by measuring every 2-stage partition).
#include <gtest/gtest.h>

#include <fstream>

#include "run_helpers.h"

namespace pw::rt {
namespace {
using namespace testing;

constexpr int kLayers = 6;

nlohmann::json heavy_job(int iterations) {
  auto doc = mlp_job(2, 4, "1f1b", std::vector<int>(kLayers - 1, 384), iterations);
  doc["model"]["input"] = 384;
  doc["training"]["microbatch_size"] = 48;
  doc["training"]["batch_size"] = 48 * 4;
  doc["data"]["samples"] = 48 * 4 * 2;
  return doc;
}

nlohmann::json timeline(const std::string& dir) {
  std::ifstream in(dir + "/migration.json");
  return nlohmann::json::parse(in);
}

// Mean iteration time over the last `n` iterations of a run.
double tail_ms(const nlohmann::json& report, int n) {
  const auto& t = report["timeline"];
  double s = 0;
  for (size_t i = t.size() - n; i < t.size(); ++i) s += t[i]["iter_ms"].get<double>();
  return s / n;
}

TEST(MigrationIntegration, RebalancesAfterASlowdownAndRecovers) {
  const std::vector<double> slow{1, 3};
  // Best static plan under the slowdown, measured.
  double best = 1e300;
  int best_cut = -1;
  for (int cut = 0; cut < kLayers - 1; ++cut) {
    auto doc = heavy_job(8);
    doc["runtime"] = {{"slowdown", slow}};
    std::string dir = temp_dir("rec-static");
    auto opt = options(doc, dir);
    Plan p = uniform_partition(kLayers, 2);
    p.stages = {{0, cut}, {cut + 1, kLayers - 1}};
    opt.plan = p;
    RunResult r = run_job(opt);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    double ms = tail_ms(timeline(dir), 5);
    std::printf("static cut after layer %d: %.1f ms/iteration\n", cut, ms);
    if (ms < best) {
      best = ms;
      best_cut = cut;
    }
    std::filesystem::remove_all(dir);
  }
  // Online: balanced plan, stage 1 becomes 3x slower at iteration 3.
  auto doc = heavy_job(22);
  doc["runtime"] = {{"slowdown", slow}, {"slowdown_from", 3}, {"replan", {{"enabled", true}}}};
  std::string dir = temp_dir("rec-online");
  auto opt = options(doc, dir);
  Plan p = uniform_partition(kLayers, 2);
  opt.plan = p;
  RunResult r = run_job(opt);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  auto rep = timeline(dir);
  ASSERT_GE(rep["migrations"].size(), 1u) << rep.dump();
  EXPECT_EQ(rep["migrations"][0]["reason"], "imbalance");
  const auto& t = rep["timeline"];
  double slowed = t[4]["iter_ms"].get<double>();  // slowed, not yet rebalanced
  double after = tail_ms(rep, 6);
  std::printf("best static (cut after %d): %.1f ms; online: %.1f ms slowed, %.1f ms after rebalancing\n", best_cut,
              best, slowed, after);
  EXPECT_LT(after, slowed);
  EXPECT_LE(after, 1.10 * best) << "online plan: " << rep["final_plan"].dump();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::rt
