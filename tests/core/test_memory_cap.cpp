// pipeline.memory_cap (issue 43): the field's forms, its refusals naming the
// field, and the cap in the generator's units.
#include <gtest/gtest.h>

#include <cmath>

#include "core/schedule/memory_cap.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

nlohmann::json job_with(const nlohmann::json& cap, const std::string& schedule = "generated") {
  nlohmann::json doc = {{"name", "x"},
                        {"model", {{"kind", "uniform"}, {"layers", 8}, {"fwd_ms", 1}, {"bwd_ms", 2}, {"activation_mb", 1}}},
                        {"cluster", {{"devices", 4}, {"device", "v100-32g"}}},
                        {"training", {{"batch_size", 16}, {"microbatch_size", 1}}},
                        {"pipeline", {{"stages", 4}, {"schedule", schedule}}}};
  if (!cap.is_null()) doc["pipeline"]["memory_cap"] = cap;
  return doc;
}

std::string error_of(const nlohmann::json& cap, const std::string& schedule = "generated") {
  try {
    parse_job(job_with(cap, schedule));
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryCap, ReadsFractionsAndBytes) {
  EXPECT_FALSE(parse_job(job_with(nullptr)).pipeline.memory_cap.set());
  EXPECT_NEAR(parse_job(job_with("1/3")).pipeline.memory_cap.fraction, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(parse_job(job_with(0.5)).pipeline.memory_cap.fraction, 0.5);
  EXPECT_DOUBLE_EQ(parse_job(job_with(" 1 / 2 ")).pipeline.memory_cap.fraction, 0.5);
  EXPECT_DOUBLE_EQ(parse_job(job_with(1)).pipeline.memory_cap.fraction, 1.0);
  EXPECT_EQ(parse_job(job_with("12GiB")).pipeline.memory_cap.bytes, 12ull << 30);
  EXPECT_EQ(parse_job(job_with("800 MB")).pipeline.memory_cap.bytes, 800'000'000ull);
  EXPECT_EQ(parse_job(job_with("1.5kib")).pipeline.memory_cap.bytes, 1536ull);
  EXPECT_EQ(parse_memory_cap("1/3"), memory_cap_fraction(1.0 / 3));
  EXPECT_EQ(to_string(parse_memory_cap("1/3")), "1/3 of 1f1b's activations");
  EXPECT_EQ(to_string(parse_memory_cap("1")), "1x 1f1b's activations");
  EXPECT_EQ(to_string(parse_memory_cap("2GiB")), "2.00 GiB");
  EXPECT_EQ(to_string(MemoryCap{}), "none");
}

TEST(MemoryCap, RefusalsNameTheField) {
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(-0.5), nlohmann::json(2.5), nlohmann::json("3/1"),
                                    nlohmann::json("1/0"), nlohmann::json("lots"), nlohmann::json("12 parsecs"),
                                    nlohmann::json(""), nlohmann::json(true), nlohmann::json::array(),
                                    nlohmann::json("0 B"), nlohmann::json("1..2")}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("pipeline.memory_cap"), std::string::npos) << bad.dump() << ": " << e;
  }
  EXPECT_NE(error_of("12 parsecs").find("unknown unit"), std::string::npos);
  EXPECT_NE(error_of(2.5).find("(0, 2]"), std::string::npos);
  const std::string async = error_of("1/2", "pipedream");
  EXPECT_NE(async.find("pipeline.memory_cap"), std::string::npos) << async;
}

TEST(MemoryCap, UnitsFollowOneF1BsBusiestDevice) {
  // Unset: no limit.
  EXPECT_TRUE(std::isinf(memory_cap_units(MemoryCap{}, 8, 16, 1)));
  // A fraction of min(m, p) microbatches; in a V, chunk units (two per device microbatch).
  EXPECT_DOUBLE_EQ(memory_cap_units(memory_cap_fraction(0.5), 8, 16, 1), 4.0);
  EXPECT_DOUBLE_EQ(memory_cap_units(memory_cap_fraction(1.0 / 3), 8, 16, 2), 16.0 / 3);
  EXPECT_DOUBLE_EQ(memory_cap_units(memory_cap_fraction(1), 8, 4, 1), 4.0);  // m < p: 1F1B holds m
  // Unequal chunks: the device's bytes per microbatch over the unit's bytes.
  EXPECT_DOUBLE_EQ(memory_cap_units(memory_cap_fraction(0.5), 4, 8, 2, 300, 500), 0.5 * 4 * 500 / 300);
  // A microbatch that keeps nothing on the device (all offloaded): no count is over.
  EXPECT_TRUE(std::isinf(memory_cap_units(memory_cap_fraction(0.5), 4, 8, 1, 0, 500)));
  // Bytes: over the unit's bytes.
  MemoryCap b;
  b.bytes = 1000;
  EXPECT_DOUBLE_EQ(memory_cap_units(b, 4, 8, 1, 250), 4.0);
}

}  // namespace
}  // namespace pw
