// cluster.messaging: "tagged" (default) or "ordered"; anything else is
// refused naming the field.
#include <gtest/gtest.h>

#include "core/spec/job_spec.h"
#include "core/spec/messaging_spec.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

nlohmann::json job() {
  return nlohmann::json::parse(R"({
    "name": "t",
    "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
    "training": {"batch_size": 16, "microbatch_size": 2},
    "cluster": {"devices": 4, "device": "v100-32g"},
    "pipeline": {"stages": 4}
  })");
}

TEST(MessagingSpec, DefaultsToTaggedAndReadsOrdered) {
  EXPECT_EQ(cluster_messaging(parse_job(job())), "tagged");
  auto d = job();
  d["cluster"]["messaging"] = "ordered";
  EXPECT_EQ(cluster_messaging(parse_job(d)), "ordered");
  // A job built in code, without a document, is tagged.
  EXPECT_EQ(cluster_messaging(JobSpec{}), "tagged");
}

TEST(MessagingSpec, AnUnknownModeIsRefusedNamingTheField) {
  auto d = job();
  d["cluster"]["messaging"] = "fifo";
  try {
    parse_job(d);
    FAIL() << "accepted messaging \"fifo\"";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.messaging"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pw
