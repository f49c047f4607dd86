// The planner names are the job format's (core/spec/job_fields.h, which the
// parser checks pipeline.planner against without reaching up to plan/), and
// the registry makes the planners: the two lists must not drift apart.
#include <gtest/gtest.h>

#include "core/plan/planner_registry.h"
#include "core/spec/job_fields.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

TEST(PlannerNames, RegistryMakesExactlyTheSpecsNamesInItsOrder) {
  std::vector<std::string> registered;
  for (const auto& e : planner_registry()) registered.push_back(e.name);
  EXPECT_EQ(registered, planner_names());
  for (const auto& n : planner_names()) EXPECT_EQ(make_planner(n)->name(), n);
}

TEST(PlannerNames, TheParserAcceptsEachNameAndRefusesOthersNamingTheField) {
  auto job = [](const std::string& planner) {
    return nlohmann::json{{"name", "planners"},
                          {"model", {{"kind", "uniform"}, {"layers", 4}, {"fwd_ms", 1}, {"bwd_ms", 2}, {"activation_mb", 1}}},
                          {"training", {{"batch_size", 8}, {"microbatch_size", 1}}},
                          {"cluster", {{"devices", 2}, {"device", "v100-32g"}}},
                          {"pipeline", {{"stages", 2}, {"microbatches", 8}, {"planner", planner}}}};
  };
  for (const auto& n : planner_names()) EXPECT_EQ(parse_job(job(n)).pipeline.planner, n);
  try {
    parse_job(job("nonesuch"));
    FAIL() << "an unknown planner was accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "pipeline.planner");
  }
}

}  // namespace
}  // namespace pw
