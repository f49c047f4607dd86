#include <gtest/gtest.h>

#include <filesystem>

#include "core/spec/job_spec.h"
#include "core/spec/learning_rate.h"
#include "core/spec/messaging_spec.h"
#include "core/spec/spec_error.h"

using namespace pw;

namespace {
nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "name": "t",
    "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
    "training": {"batch_size": 16, "microbatch_size": 2},
    "cluster": {"devices": 4, "device": "v100-32g"},
    "pipeline": {"stages": 4}
  })");
}

std::string error_of(nlohmann::json doc) {
  try {
    parse_job(doc);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(JobSpec, ParsesMinimalJobWithDefaults) {
  JobSpec j = parse_job(minimal());
  EXPECT_EQ(j.pipeline.microbatches, 8);
  EXPECT_EQ(j.pipeline.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(j.pipeline.planner, "uniform");
  EXPECT_EQ(j.cluster.device.memory_bytes, 32ull << 30);
}

TEST(JobSpec, ErrorsNameTheFieldPath) {
  auto d = minimal();
  d["pipeline"]["stages"] = 0;
  EXPECT_EQ(error_of(d), "pipeline.stages: must be in [1, 4096], got 0");
  d = minimal();
  d["training"]["batch_size"] = 15;
  EXPECT_NE(error_of(d).find("training.batch_size: must be a multiple of microbatch_size"), std::string::npos);
  d = minimal();
  d["model"]["kind"] = "rnn";
  EXPECT_NE(error_of(d).find("model.kind: must be one of"), std::string::npos);
  d = minimal();
  d["cluster"]["device"] = "tpu";
  EXPECT_NE(error_of(d).find("cluster.device: unknown device preset"), std::string::npos);
  d = minimal();
  d["pipeline"]["stages"] = 5;
  EXPECT_NE(error_of(d).find("pipeline.stages: must be <= cluster.devices"), std::string::npos);
  d = minimal();
  d["model"]["fwd_ms"] = "fast";
  EXPECT_EQ(error_of(d), "model.fwd_ms: must be a number, got string");
  d = minimal();
  d.erase("name");
  EXPECT_EQ(error_of(d), "name: is required");
  d = minimal();
  d["pipline"] = nlohmann::json::object();
  EXPECT_EQ(error_of(d), "pipline: unknown field");
  d = minimal();
  d["training"]["lr_schedule"] = "linear";
  EXPECT_NE(error_of(d).find("training.lr_schedule: must be one of"), std::string::npos);
  d = minimal();
  d["training"]["iterations"] = 10;
  d["training"]["warmup"] = 10;
  EXPECT_NE(error_of(d).find("training.warmup: must be less than training.iterations (10)"), std::string::npos);
}

// One name per schedule (issue 30): the supernet jobs' old "async-1f1b" is refused naming the field
// and "pipedream", which every job (supernet or pipeline) takes.
TEST(JobSpec, AsyncOneFOneBIsRefusedNamingPipedream) {
  auto d = minimal();
  d["pipeline"]["schedule"] = "async-1f1b";
  EXPECT_EQ(error_of(d), "pipeline.schedule: \"async-1f1b\" is called \"pipedream\" (PipeDream's 1F1B without flush, "
                         "for supernet and pipeline jobs alike): set \"schedule\": \"pipedream\"");
  d["pipeline"]["schedule"] = "pipedream";
  EXPECT_EQ(parse_job(d).pipeline.schedule, ScheduleKind::PipeDream);
  EXPECT_EQ(to_string(ScheduleKind::PipeDream), "pipedream");
}

TEST(LearningRate, WarmupThenCosineToZero) {
  TrainingSpec t;
  t.lr = 0.1;
  t.iterations = 12;
  t.warmup = 4;
  t.lr_schedule = "cosine";
  EXPECT_DOUBLE_EQ(learning_rate_at(t, 0), 0.025);
  EXPECT_DOUBLE_EQ(learning_rate_at(t, 3), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate_at(t, 4), 0.1);
  EXPECT_NEAR(learning_rate_at(t, 8), 0.05, 1e-15);  // half way through the decay
  EXPECT_NEAR(learning_rate_at(t, 12), 0.0, 1e-15);
  t.lr_schedule = "constant";
  t.warmup = 0;
  EXPECT_DOUBLE_EQ(learning_rate_at(t, 7.5), 0.1);
}

TEST(JobSpec, OverridesSetNestedFieldsWithJsonValues) {
  auto d = minimal();
  apply_override(d, "pipeline.schedule=gpipe");
  apply_override(d, "training.batch_size=32");
  apply_override(d, "cluster.memory_gb=1.5");
  JobSpec j = parse_job(d);
  EXPECT_EQ(j.pipeline.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(j.pipeline.microbatches, 16);
  EXPECT_EQ(j.cluster.device.memory_bytes, static_cast<std::uint64_t>(1.5 * (1ull << 30)));
  EXPECT_THROW(apply_override(d, "novalue"), SpecError);
}

TEST(JobSpec, ShippedJobsAllLoad) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PW_SOURCE_DIR) + "/resources/jobs")) {
    if (e.path().extension() != ".json") continue;
    EXPECT_NO_THROW(load_job(e.path().string())) << e.path();
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(MessagingSpec, DefaultsToTaggedAndReadsOrdered) {
  EXPECT_EQ(cluster_messaging(parse_job(minimal())), "tagged");
  auto d = minimal();
  d["cluster"]["messaging"] = "ordered";
  EXPECT_EQ(cluster_messaging(parse_job(d)), "ordered");
  // A job built in code, without a document, is tagged.
  EXPECT_EQ(cluster_messaging(JobSpec{}), "tagged");
}

TEST(MessagingSpec, AnUnknownModeIsRefusedNamingTheField) {
  auto d = minimal();
  d["cluster"]["messaging"] = "fifo";
  try {
    parse_job(d);
    FAIL() << "accepted messaging \"fifo\"";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.messaging"), std::string::npos) << e.what();
  }
}

// cluster.action_overhead_us by microbatch size (what `profile --in-situ`
// fits at several sizes): the job reads the value at its own size, linear
// between the sizes given, the nearest one's beyond them.
TEST(JobSpec, ActionOverheadTableIsReadAtTheJobsSize) {
  auto d = minimal();
  d["cluster"]["action_overhead_us"] = {{"8", 60}, {"2", 200}, {"32", 100}};
  JobSpec j = parse_job(d);  // microbatch 2
  ASSERT_EQ(j.cluster.device.action_overhead_by_microbatch.size(), 3u);
  EXPECT_EQ(j.cluster.device.action_overhead_by_microbatch[0].first, 2);  // in size order
  EXPECT_DOUBLE_EQ(j.cluster.device.action_overhead_us, 200);
  d["training"]["microbatch_size"] = 4;  // a third of the way from 2 to 8: 200 - 140 / 3
  EXPECT_NEAR(parse_job(d).cluster.device.action_overhead_us, 200 - 140.0 / 3, 1e-9);
  d["training"]["microbatch_size"] = 16;  // from 8 to 32, a third: 60 + 40 / 3
  EXPECT_NEAR(parse_job(d).cluster.device.action_overhead_us, 60 + 40.0 / 3, 1e-9);
  d["training"]["microbatch_size"] = 1;  // below the table: its first size's
  EXPECT_DOUBLE_EQ(parse_job(d).cluster.device.action_overhead_us, 200);
  d["training"]["batch_size"] = 64;
  d["training"]["microbatch_size"] = 64;  // above: its last size's
  EXPECT_DOUBLE_EQ(parse_job(d).cluster.device.action_overhead_us, 100);
  // A plain number stays one value for every size.
  d["cluster"]["action_overhead_us"] = 75;
  EXPECT_DOUBLE_EQ(parse_job(d).cluster.device.action_overhead_us, 75);
  EXPECT_TRUE(parse_job(d).cluster.device.action_overhead_by_microbatch.empty());
}

TEST(JobSpec, ActionOverheadTableRefusesBadSizesAndValues) {
  auto with = [](nlohmann::json table) {
    auto d = minimal();
    d["cluster"]["action_overhead_us"] = table;
    return error_of(d);
  };
  EXPECT_EQ(with({{"two", 5}}), "cluster.action_overhead_us.two: the key must be a microbatch size in [1, 65536], got \"two\"");
  EXPECT_EQ(with({{"0", 5}}), "cluster.action_overhead_us.0: the key must be a microbatch size in [1, 65536], got \"0\"");
  EXPECT_EQ(with({{"4", -1}}), "cluster.action_overhead_us.4: must be in [0.0, 1000000000.0], got -1");
  EXPECT_EQ(with({{"4", "fast"}}), "cluster.action_overhead_us.4: must be a number, got string");
  EXPECT_NE(with(nlohmann::json::object()).find("cluster.action_overhead_us: must be a number or a table"), std::string::npos);
  EXPECT_EQ(with({{"04", 1}, {"4", 2}}), "cluster.action_overhead_us.4: microbatch size given twice");
}

// `--set 'cluster.action_overhead_us={"2":190,"8":70}'` (what profile prints).
TEST(JobSpec, ActionOverheadTableComesThroughAnOverride) {
  auto d = minimal();
  apply_override(d, R"(cluster.action_overhead_us={"2":190,"8":70})");
  EXPECT_DOUBLE_EQ(parse_job(d).cluster.device.action_overhead_us, 190);
}
