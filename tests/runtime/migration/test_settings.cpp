// The job's "runtime" section: bad input names the field.
#include <gtest/gtest.h>

#include "core/spec/spec_error.h"
#include "runtime/migration/settings.h"

namespace pw::rt::migration {
namespace {

std::string error_of(const nlohmann::json& runtime, int stages = 2, int layers = 4) {
  try {
    parse_settings({{"runtime", runtime}}, stages, layers);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(MigrationSettings, AbsentSectionDisablesTheAgent) {
  EXPECT_FALSE(parse_settings({{"name", "x"}}, 2, 4).present);
  EXPECT_TRUE(parse_settings({{"runtime", nlohmann::json::object()}}, 2, 4).present);
}

TEST(MigrationSettings, ParsesEveryField) {
  auto s = parse_settings({{"runtime",
                            {{"slowdown", {1, 3}},
                             {"slowdown_from", 4},
                             {"replan", {{"min_gain", 0.1}, {"sustain_iterations", 3}}},
                             {"migrate", {{{"iteration", 2}, {"stages", {{0, 0}, {1, 3}}}}}}}}},
                          2, 4);
  EXPECT_EQ(s.slowdown, (std::vector<double>{1, 3}));
  EXPECT_EQ(s.slowdown_from, 4);
  EXPECT_TRUE(s.replan);
  EXPECT_DOUBLE_EQ(s.trigger.min_gain, 0.1);
  EXPECT_EQ(s.trigger.sustain_iterations, 3);
  ASSERT_EQ(s.migrate.size(), 1u);
  EXPECT_EQ(s.migrate[0].stages[1].first_layer, 1);
  EXPECT_EQ(s.migrate[0].stages[1].last_layer, 3);
}

TEST(MigrationSettings, BadInputNamesTheField) {
  EXPECT_NE(error_of({{"slowdown", {1, 2, 3}}}).find("runtime.slowdown"), std::string::npos);
  EXPECT_NE(error_of({{"slowdown", {1, 0.5}}}).find("runtime.slowdown[1]"), std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"min_gain", "a"}}}}).find("runtime.replan.min_gain"), std::string::npos);
  EXPECT_NE(error_of({{"replan", {{"imbalance_release", 0.5}}}}).find("hysteresis"), std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 1}, {"stages", {{0, 1}, {3, 3}}}}}}}).find("runtime.migrate[0].stages[1]"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 1}, {"stages", {{0, 1}, {2, 2}}}}}}}).find("covers 3 layers"),
            std::string::npos);
  EXPECT_NE(error_of({{"migrate", {{{"iteration", 2}, {"stages", {{0, 1}, {2, 3}}}},
                                   {{"iteration", 2}, {"stages", {{0, 1}, {2, 3}}}}}}})
                .find("runtime.migrate[1].iteration"),
            std::string::npos);
}

}  // namespace
}  // namespace pw::rt::migration
