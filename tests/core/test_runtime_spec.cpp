// The job's "runtime" section is parsed by the core (core/spec/runtime_spec):
// bad input names the field for every command, not only `run`.
#include <gtest/gtest.h>

#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

// A 4-layer, 2-stage job with the given runtime section (null: none).
nlohmann::json job_with(const nlohmann::json& runtime, const std::string& schedule = "1f1b") {
  nlohmann::json doc = {{"name", "x"},
                        {"model", {{"kind", "uniform"}, {"layers", 4}, {"fwd_ms", 1}, {"bwd_ms", 2}, {"activation_mb", 1}}},
                        {"cluster", {{"devices", 2}, {"device", "v100-32g"}}},
                        {"training", {{"batch_size", 4}, {"microbatch_size", 1}}},
                        {"pipeline", {{"stages", 2}, {"schedule", schedule}}}};
  if (!runtime.is_null()) doc["runtime"] = runtime;
  return doc;
}

// What plan and simulate see: the whole job, checked against its profile.
std::string error_of(const nlohmann::json& runtime, const std::string& schedule = "1f1b") {
  try {
    JobSpec job = parse_job(job_with(runtime, schedule));
    (void)job_profile(job);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeSpec, AbsentSectionDisablesTheAgent) {
  EXPECT_FALSE(parse_job(job_with(nullptr)).runtime.present);
  EXPECT_TRUE(parse_job(job_with(nlohmann::json::object())).runtime.present);
}

TEST(RuntimeSpec, ParsesEveryField) {
  auto s = parse_job(job_with({{"slowdown", {1, 3}},
                               {"slowdown_from", 4},
                               {"replan", {{"min_gain", 0.1}, {"sustain_iterations", 3}, {"planner", "gpipe"}}},
                               {"migrate", {{{"iteration", 2}, {"stages", {{0, 0}, {1, 3}}}},
                                            {{"iteration", 5}, {"policy", {"keep", "recompute", "swap", "keep"}}}}},
                               {"fail_in_migration", 1}}))
               .runtime;
  EXPECT_EQ(s.slowdown, (std::vector<double>{1, 3}));
  EXPECT_EQ(s.slowdown_from, 4);
  EXPECT_TRUE(s.replan);
  EXPECT_EQ(s.planner, "gpipe");
  EXPECT_DOUBLE_EQ(s.trigger.min_gain, 0.1);
  EXPECT_EQ(s.trigger.sustain_iterations, 3);
  ASSERT_EQ(s.migrate.size(), 2u);
  EXPECT_EQ(s.migrate[0].stages[1].first_layer, 1);
  EXPECT_EQ(s.migrate[0].stages[1].last_layer, 3);
  EXPECT_EQ(s.migrate[1].policy[2], MemoryPolicy::Swap);
  EXPECT_EQ(s.fail_in_migration, 1);
}

TEST(RuntimeSpec, BadInputNamesTheField) {
  EXPECT_NE(error_of({{"slowdown", {1, 2, 3}}}).find("runtime.slowdown"), std::string::npos);
  EXPECT_NE(error_of({{"slowdown", {1, 0.5}}}).find("runtime.slowdown[1]"), std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"min_gain", "a"}}}}).find("runtime.replan.min_gain"), std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"imbalance_release", 0.5}}}}).find("hysteresis"), std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"planner", "nope"}}}}).find("runtime.replan.planner: must be one of"),
            std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"sustain_iterations", 4294967297.0}}}}).find("runtime.replan.sustain_iterations"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 1}, {"stages", {{0, 1}, {3, 3}}}}}}}).find("runtime.migrate[0].stages[1]"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 1}, {"stages", {{0, 1}, {2, 2}}}}}}}).find("covers 3 layers"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 1}, {"policy", {"keep"}}}}}}).find("runtime.migrate[0].policy"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 2}, {"stages", {{0, 1}, {2, 3}}}},
                                   {{"iteration", 2}, {"stages", {{0, 1}, {2, 3}}}}}}})
                .find("runtime.migrate[1].iteration"),
            std::string::npos);
  EXPECT_NE(error_of({{"typo", 1}}).find("runtime.typo: unknown field"), std::string::npos);
  EXPECT_NE(error_of({{"replan", nlohmann::json::object()}}, "pipedream").find("runtime: live migration"),
            std::string::npos);
  EXPECT_EQ(error_of({{"replan", nlohmann::json::object()}}), "");
}

}  // namespace
}  // namespace pw
