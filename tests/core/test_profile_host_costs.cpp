// The host costs a calibrated profile carries (core/model/profile_host_costs.h)
// and how a job takes them (core/job/profile_host_costs.h): the file's
// member round-trips, bad members are refused by name, the job's own
// cluster fields win, and the planner sees what the job would have had with
// the same figures set by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "core/analysis/suggestions.h"
#include "core/job/profile_host_costs.h"
#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"
#include "core/spec/device.h"

namespace pw {
namespace {

nlohmann::json job_doc() {
  return nlohmann::json::parse(R"({
    "name": "host-costs", "model": {"kind": "mlp", "widths": [64, 64, 64, 64]},
    "training": {"batch_size": 32, "microbatch_size": 4},
    "cluster": {"device": "cpu", "devices": 2},
    "pipeline": {"stages": 2, "microbatches": 8, "schedule": "1f1b"}})");
}

ModelProfile measured_on(const std::string& device) {
  ModelProfile p;
  p.source = "measured";
  p.device = device;
  ProfileHostCosts c;
  c.send_cpu_us = 150;
  c.send_cpu_gbps = 8;
  c.action_overhead_us = {{2, 300}, {8, 100}};
  p.host_costs = c;
  return p;
}

TEST(ProfileHostCosts, RoundTripsThroughTheProfileFile) {
  ModelProfile p = measured_on("cpu");
  p.layers.push_back(LayerProfile{.name = "l0", .fwd_ms = 1, .bwd_ms = 2});
  const ModelProfile back = profile_from_json(profile_to_json(p));
  ASSERT_TRUE(back.host_costs);
  EXPECT_EQ(back.host_costs->send_cpu_us, 150);
  EXPECT_EQ(back.host_costs->send_cpu_gbps, 8);
  const std::vector<std::pair<int, double>> table{{2, 300}, {8, 100}};
  EXPECT_EQ(back.host_costs->action_overhead_us, table);
  p.host_costs.reset();
  EXPECT_FALSE(profile_to_json(p).contains("host_costs"));
  EXPECT_FALSE(profile_from_json(profile_to_json(p)).host_costs);
}

TEST(ProfileHostCosts, SizesAreReadByValueNotByTextOrder) {
  // "10" sorts before "2" as text; the table is by size.
  const auto c = host_costs_from_json(nlohmann::json::parse(R"({"action_overhead_us": {"10": 5, "2": 50}})"));
  ASSERT_EQ(c.action_overhead_us.size(), 2u);
  EXPECT_EQ(c.action_overhead_us[0].first, 2);
  EXPECT_EQ(c.action_overhead_us[1].first, 10);
}

void expect_refused(const char* text, const std::string& naming) {
  try {
    host_costs_from_json(nlohmann::json::parse(text));
    ADD_FAILURE() << text << " was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(naming), std::string::npos) << e.what();
  }
}

TEST(ProfileHostCosts, BadMembersAreRefusedByName) {
  expect_refused(R"({"send_cpu_us": -1})", "host_costs.send_cpu_us");
  expect_refused(R"({"send_cpu_us": "fast"})", "host_costs.send_cpu_us");
  expect_refused(R"({"send_cpu_gbps": 3})", "host_costs.send_cpu_gbps");
  expect_refused(R"({"action_overhead_us": {"0": 3}})", "host_costs.action_overhead_us");
  expect_refused(R"({"action_overhead_us": {"4x": 3}})", "host_costs.action_overhead_us");
  expect_refused(R"({"action_overhead_us": {"4": -3}})", "host_costs.action_overhead_us.4");
  expect_refused(R"({"action_overhead_us": {}})", "host_costs.action_overhead_us");
  expect_refused(R"({"overhead": 1})", "host_costs.overhead");
}

TEST(ProfileHostCosts, AJobWithoutItsOwnFieldsTakesTheProfiles) {
  JobSpec job = parse_job(job_doc());
  ModelProfile p = measured_on("cpu");
  apply_profile_host_costs(job, p);
  EXPECT_EQ(job.cluster.device.send_cpu_us, 150);
  EXPECT_EQ(job.cluster.device.send_cpu_gbps, 8);
  // Size 4 lies between the table's 2 (300 us) and 8 (100 us): 300 - 200 x 2/6.
  EXPECT_DOUBLE_EQ(job.cluster.device.action_overhead_us, 300.0 - 200.0 * 2.0 / 6.0);
  // The document says the same, so what re-reads it (suggestions, workers) plans alike.
  const JobSpec reread = parse_job(job.raw);
  EXPECT_EQ(reread.cluster.device.send_cpu_us, 150);
  EXPECT_DOUBLE_EQ(reread.cluster.device.action_overhead_us, job.cluster.device.action_overhead_us);
}

TEST(ProfileHostCosts, TheJobsOwnFieldsWin) {
  nlohmann::json doc = job_doc();
  doc["cluster"]["send_cpu_us"] = 0;
  doc["cluster"]["action_overhead_us"] = 7;
  JobSpec job = parse_job(doc);
  ModelProfile p = measured_on("cpu");
  apply_profile_host_costs(job, p);
  EXPECT_EQ(job.cluster.device.send_cpu_us, 0);
  EXPECT_EQ(job.cluster.device.send_cpu_gbps, 0);
  EXPECT_EQ(job.cluster.device.action_overhead_us, 7);
  EXPECT_TRUE(job.cluster.device.action_overhead_by_microbatch.empty());
}

TEST(ProfileHostCosts, CostsOfAnotherDeviceAreNotTakenAndTheNoteSaysSo) {
  JobSpec job = parse_job(job_doc());
  const double before = job.cluster.device.send_cpu_us;
  ModelProfile p = measured_on("a100-80g");
  apply_profile_host_costs(job, p);
  EXPECT_EQ(job.cluster.device.send_cpu_us, before);
  ASSERT_EQ(p.assumptions.size(), 1u);
  EXPECT_NE(p.assumptions[0].find("measured on a100-80g"), std::string::npos) << p.assumptions[0];
}

TEST(ProfileHostCosts, AMeasuredProfileWithoutThemIsNamedAnAnalyticOneIsNot) {
  JobSpec job = parse_job(job_doc());
  ASSERT_FALSE(has_host_costs(job)) << "the cpu preset is expected to carry no host costs of its own";
  ModelProfile p;
  p.source = "measured";
  EXPECT_TRUE(missing_host_costs_note(job, p));
  p.source = "analytic";
  EXPECT_FALSE(missing_host_costs_note(job, p));
  p.source = "measured";
  job.cluster.device.action_overhead_us = 5;
  EXPECT_FALSE(missing_host_costs_note(job, p));
}

// explain's advice leans on the same costs: simulated from a measured
// profile without host costs it carries the caveat; with them, none.
TEST(ProfileHostCosts, AdviceFromAProfileWithoutThemCarriesTheCaveat) {
  const auto dir = std::filesystem::temp_directory_path() / ("pw-host-costs-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json doc = job_doc();
  ModelProfile p = analytic_profile(parse_job(doc));
  p.source = "measured";
  p.device = "cpu";
  save_profile_file(p, (dir / "bare.json").string());
  p.host_costs = ProfileHostCosts{.send_cpu_us = 100, .send_cpu_gbps = 4, .action_overhead_us = {{4, 250}}};
  save_profile_file(p, (dir / "calibrated.json").string());

  doc["model"]["profile"] = (dir / "bare.json").string();
  const SuggestionReport bare = simulate_suggestions(doc);
  ASSERT_EQ(bare.caveats.size(), 1u);
  EXPECT_NE(bare.caveats[0].find("no host costs"), std::string::npos) << bare.caveats[0];
  doc["model"]["profile"] = (dir / "calibrated.json").string();
  EXPECT_TRUE(simulate_suggestions(doc).caveats.empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw
