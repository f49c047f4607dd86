// Hostile numbers and documents: every refusal is a SpecError naming the
// JSON path (the CLI's exit 2), never a wrapped cast, a crash or a bare
// exception (issues 20 and 22; bounds in core/spec/spec_bounds.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/bounded_json.h"
#include "core/spec/job_fields.h"
#include "core/spec/job_spec.h"
#include "core/spec/spec_error.h"

using namespace pw;

namespace {
const std::string kUniform = R"({
  "name": "u",
  "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1, "bwd_ms": 2, "activation_mb": 1},
  "training": {"batch_size": 16, "microbatch_size": 2},
  "cluster": {"devices": 4, "device": "v100-32g"},
  "pipeline": {"stages": 4}
})";
const std::string kBert = R"({
  "name": "b",
  "model": {"kind": "bert", "layers": 4, "hidden": 256, "heads": 4, "seq_len": 128, "vocab": 30522},
  "training": {"batch_size": 16, "microbatch_size": 2},
  "cluster": {"devices": 4, "device": "v100-32g"},
  "pipeline": {"stages": 4}
})";

// The refusal of `text` with `overrides`, as "path: reason"; "" if accepted.
std::string refusal(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    JobSpec job = job_from_text(text, ".", overrides);
    (void)job_profile(job);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}
std::string path_of_refusal(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    JobSpec job = job_from_text(text, ".", overrides);
    (void)job_profile(job);
  } catch (const SpecError& e) {
    return e.path();
  }
  return "";
}
}  // namespace

// The examples of the issues, each once wrapped by a cast or a crash.
TEST(JobBounds, IssueExamplesAreRefusedNamingThePath) {
  EXPECT_EQ(refusal(kUniform, {"pipeline.microbatches=1e12"}),
            "pipeline.microbatches: must be in [1, 65536], got 1000000000000.0");
  EXPECT_EQ(refusal(kBert, {"model.hidden=1e30"}), "model.hidden: must be in [1, 131072], got 1e+30");
  EXPECT_EQ(refusal(kUniform, {"model.layers=100000000"}), "model.layers: must be in [1, 10000], got 100000000");
  EXPECT_EQ(refusal(kBert, {"model.heads=4294967296"}), "model.heads: must be in [1, 256], got 4294967296");
  EXPECT_EQ(refusal(kBert, {"training.microbatch_size=4294967296"}),
            "training.microbatch_size: must be in [1, 65536], got 4294967296");
  EXPECT_EQ(refusal(kBert, {"model.seq_len=2147483648"}), "model.seq_len: must be in [1, 131072], got 2147483648");
  // 2^32 + 1 would have been 1 after a cast to int: refused, not accepted.
  EXPECT_EQ(path_of_refusal(kUniform, {"cluster.devices=4294967297"}), "cluster.devices");
  EXPECT_EQ(path_of_refusal(kUniform, {"training.iterations=-1"}), "training.iterations");
  EXPECT_EQ(path_of_refusal(kUniform, {"training.batch_size=2.5"}), "training.batch_size");
  EXPECT_EQ(path_of_refusal(kUniform, {"model.fwd_ms=1e300"}), "model.fwd_ms");
  EXPECT_EQ(path_of_refusal(kUniform, {"cluster.memory_gb=1e300"}), "cluster.memory_gb");
  // A batch whose microbatch count is beyond the bound names the batch.
  EXPECT_EQ(path_of_refusal(kUniform, {"training.microbatch_size=1", "training.batch_size=1000000"}),
            "training.batch_size");
}

TEST(JobBounds, IntegersAreReadExactlyInTheirOwnType) {
  JobSpec j = job_from_text(kUniform, ".", {"training.seed=18446744073709551615"});
  EXPECT_EQ(j.training.seed, UINT64_MAX);
  EXPECT_EQ(path_of_refusal(kUniform, {"training.seed=-1"}), "training.seed");
  EXPECT_EQ(path_of_refusal(kUniform, {"training.seed=18446744073709551616"}), "training.seed");
  // The largest stated bound is accepted: bounds are inclusive.
  JobSpec big = job_from_text(kUniform, ".", {"model.layers=10000"});
  EXPECT_EQ(big.model.layers, 10000);
  EXPECT_EQ(refusal(kUniform, {"model.layers=10001"}), "model.layers: must be in [1, 10000], got 10001");
}

TEST(JobBounds, OutOfRangeLiteralsNameTheirPath) {
  std::string text = kUniform;
  text.replace(text.find("\"fwd_ms\": 1"), 11, "\"fwd_ms\": 1e400");
  EXPECT_EQ(path_of_refusal(text), "model.fwd_ms");
  EXPECT_NE(refusal(text).find("number out of range"), std::string::npos);
  std::string mlp = R"({"name": "m", "model": {"kind": "mlp", "widths": [8, 1e400]}})";
  EXPECT_EQ(path_of_refusal(mlp), "model.widths[1]");
  EXPECT_EQ(path_of_refusal(kUniform, {"model.bwd_ms=-1e999"}), "model.bwd_ms");
  // Not JSON at all: a string value, refused by the field's type.
  EXPECT_EQ(refusal(kUniform, {"model.bwd_ms=fast"}), "model.bwd_ms: must be a number, got string");
}

TEST(JobBounds, NestingIsBoundedBeforeTheStackIs) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_bounded_json(nested(kMaxJsonDepth)));
  EXPECT_THROW(parse_bounded_json(nested(kMaxJsonDepth + 1)), SpecError);
  // 200,000 levels overflowed the stack once; now a refusal at a path.
  std::string deep = R"({"name": "x", "model": {"kind": )" + nested(200000) + "}}";
  std::string path = path_of_refusal(deep);
  EXPECT_EQ(path.rfind("model.kind[0]", 0), 0u) << path;
  std::string indices = path.substr(std::string("model.kind").size());
  EXPECT_EQ(indices.size(), 3u * (kMaxJsonDepth - 2)) << path;  // the document and model objects take two levels
  EXPECT_NE(refusal(deep).find("nested deeper than 64 levels"), std::string::npos);
  // And in an override value.
  EXPECT_EQ(path_of_refusal(kUniform, {"model.fwd_ms=" + nested(1000)}).rfind("model.fwd_ms", 0), 0u);
}

TEST(JobBounds, OnlyBoundedRegularFilesAreRead) {
  auto dir = std::filesystem::temp_directory_path() / ("pw-bounds-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto reason = [](const std::string& file) {
    try {
      load_job(file);
    } catch (const SpecError& e) {
      EXPECT_EQ(e.path(), "$");
      return e.reason();
    }
    return std::string();
  };
  EXPECT_NE(reason(dir.string()).find("is not a regular file"), std::string::npos);
  EXPECT_NE(reason("/dev/zero").find("is not a regular file"), std::string::npos);
  EXPECT_NE(reason((dir / "none.json").string()).find("cannot open job file"), std::string::npos);
  std::string big = (dir / "big.json").string();
  {
    std::ofstream(big) << std::string(kMaxJobFileBytes + 1, ' ');
  }
  EXPECT_NE(reason(big).find("over the bound of 16 MiB"), std::string::npos);
  std::string ok = (dir / "ok.json").string();
  {
    std::ofstream(ok) << kUniform;
  }
  EXPECT_EQ(load_job(ok).name, "u");
  std::filesystem::remove_all(dir);
}

// model.precision defaults to what `run` trains in: fp32, 4-byte weights.
TEST(JobBounds, PrecisionDefaultsToFp32) {
  std::string mlp = R"({"name": "m", "model": {"kind": "mlp", "input": 784, "widths": [100], "classes": 10},
                          "cluster": {"device": "cpu"}})";
  JobSpec j = job_from_text(mlp, ".");
  EXPECT_EQ(j.model.precision, "fp32");
  ModelProfile p = job_profile(j);
  EXPECT_EQ(p.layers[0].param_bytes, (784u * 100 + 100) * 4);  // fc0: weights + bias, 4 bytes each
  JobSpec half = job_from_text(mlp, ".", {"model.precision=fp16"});
  EXPECT_EQ(job_profile(half).layers[0].param_bytes, (784u * 100 + 100) * 2);
}

// The data section: checked by the core for every command (it was run's alone).
TEST(JobBounds, DataSectionIsCheckedByTheCore) {
  EXPECT_EQ(job_from_text(kUniform, ".").data.kind, "synthetic");
  EXPECT_NE(refusal(kUniform, {"data.kind=video"}).find("data.kind: must be one of"), std::string::npos);
  EXPECT_EQ(refusal(kBert, {"data.kind=text"}), "model.vocab: byte-level text needs vocab 256, got 30522");
  EXPECT_EQ(refusal(kBert, {"data.kind=synthetic"}), "data.kind: gpt and bert models train on \"text\" data");
  EXPECT_EQ(refusal(kUniform, {"data.samples=0"}), "data.samples: must be in [1, 1099511627776], got 0");
  EXPECT_EQ(refusal(kUniform, {"data.sample=3"}), "data.sample: unknown field");
  std::string mlp = R"({"name": "m", "model": {"kind": "mlp", "input": 100, "widths": [8]}, "data": {"kind": "fashion-mnist"},
                        "cluster": {"device": "cpu"}})";
  EXPECT_EQ(refusal(mlp), "model.input: fashion-mnist images have 784 pixels, got 100");
  JobSpec text = job_from_text(kBert, ".", {"model.vocab=256", "data.kind=text", "data.test_samples=7", "data.eval=true"});
  EXPECT_EQ(text.data.dir, "/usr/share/games/fortunes");
  EXPECT_EQ(text.data.test_samples, 7);
  EXPECT_TRUE(text.data.eval);
}

// Stages beyond the layers a profile has are refused at the path, for
// every model kind (the planner once got them).
TEST(JobBounds, MoreStagesThanLayersIsASpecError) {
  std::string mlp = R"({"name": "m", "model": {"kind": "mlp", "widths": [8]}, "cluster": {"devices": 4, "device": "cpu"},
                        "pipeline": {"stages": 3}})";
  EXPECT_EQ(refusal(mlp), "pipeline.stages: stages x chunks (3) must be <= the model's 2 layers");
}

// Profiles are bounded the same way; their reader's errors name the file
// (job_profile then reports them at model.profile, exit 2).
TEST(JobBounds, ProfileFilesAreBoundedToo) {
  auto what = [](auto f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(what([] { load_profile_file("/dev/zero", 1); }).find("is not a regular file"), std::string::npos);
  std::string deep = "{\"layers\": " + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_NE(what([&] { profile_from_text(deep, "p.json", 1); }).find("p.json: not valid JSON"), std::string::npos);
  EXPECT_NE(what([&] { profile_from_text(deep, "p.json", 1); }).find("nested deeper than 64 levels"), std::string::npos);
  JobSpec job = job_from_text(kUniform, ".", {"model.profile=/dev/zero"});
  try {
    job_profile(job);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "model.profile");
  }
}

// The range table the studio's designer builds its form from
// (core/spec/job_fields.h) is the parser's: for every row, a value just
// past either end is refused naming the row's path, and each end is
// not refused for its range (batch_size = 1 may still not divide by the
// microbatch size).
TEST(JobBounds, TheFieldRangeTableIsWhatTheParserEnforces) {
  const std::string kTransformer = R"({"name": "t", "model": {"kind": "transformer", "encoder_layers": 2,
      "decoder_layers": 2, "hidden": 64, "heads": 4, "seq_len": 16, "vocab": 100},
      "training": {"batch_size": 4}, "cluster": {"devices": 1, "device": "cpu"}})";
  const std::string kMlp = R"({"name": "m", "model": {"kind": "mlp", "widths": [8]},
      "training": {"batch_size": 4}, "cluster": {"devices": 1, "device": "cpu"}})";
  const std::string kCnn = R"({"name": "c", "model": {"kind": "cnn", "channels": [4]},
      "training": {"batch_size": 4}, "cluster": {"devices": 1, "device": "cpu"}})";
  auto base = [&](std::string_view path) -> const std::string& {
    if (path == "model.encoder_layers" || path == "model.decoder_layers") return kTransformer;
    if (path == "model.input" || path == "model.classes") return kMlp;
    if (path == "model.image_size" || path == "model.in_channels") return kCnn;
    if (path == "model.hidden" || path == "model.seq_len" || path == "model.vocab" || path == "model.ffn_mult")
      return kBert;
    return kUniform;
  };
  auto set = [](const FieldRange& r, double v) {
    std::ostringstream os;
    os.precision(17);
    os << r.path << "=" << v;
    return os.str();
  };
  for (const FieldRange& r : job_field_ranges()) {
    SCOPED_TRACE(std::string(r.path));
    const double step = r.integer ? 1 : std::max(1e-9, r.max * 1e-6);
    const std::string out_of_range = std::string(r.path) + ": must be in";
    EXPECT_EQ(refusal(base(r.path), {set(r, r.max + step)}).rfind(out_of_range, 0), 0u);
    if (r.min > 0 || r.integer)
      EXPECT_EQ(refusal(base(r.path), {set(r, r.min - (r.integer ? 1 : r.min / 2))}).rfind(out_of_range, 0), 0u);
    EXPECT_NE(refusal(base(r.path), {set(r, r.min)}).rfind(out_of_range, 0), 0u);
    EXPECT_NE(refusal(base(r.path), {set(r, r.max)}).rfind(out_of_range, 0), 0u);
  }
  // The kinds the designer offers are the parser's.
  for (const auto& k : model_kind_names()) EXPECT_EQ(refusal(kUniform, {"model.kind=" + k}).find("model.kind:"), std::string::npos) << k;
}
