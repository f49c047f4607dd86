// Re-targeting measured profiles to another device, and jobs that name a
// profile file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/model/profile_retarget.h"
#include "core/spec/spec_error.h"
#include "profile_test_util.h"

using namespace pw;
using namespace pw::test;

TEST(ProfileRetarget, ComputeBoundLayersScaleByFlopsOthersByBandwidth) {
  ModelProfile p = load_profile_file(pipedream_graph_path("vgg16"), 0);
  DeviceSpec v100 = *device_preset("v100-32g"), a100 = *device_preset("a100-80g");
  ModelProfile q = retarget_profile(p, v100, a100);
  double flops = v100.tflops / a100.tflops, bw = v100.mem_bandwidth_gbs / a100.mem_bandwidth_gbs;
  int convs = 0, others = 0;
  for (int i = 0; i < p.size(); ++i) {
    const std::string& t = p.layers[i].type;
    bool matmul = t.rfind("Conv2d", 0) == 0 || t.rfind("Linear", 0) == 0;
    convs += matmul;
    others += !matmul;
    EXPECT_DOUBLE_EQ(q.layers[i].fwd_ms, p.layers[i].fwd_ms * (matmul ? flops : bw)) << t;
    EXPECT_DOUBLE_EQ(q.layers[i].bwd_ms, p.layers[i].bwd_ms * (matmul ? flops : bw)) << t;
    EXPECT_EQ(q.layers[i].output_bytes, p.layers[i].output_bytes);
    EXPECT_EQ(q.layers[i].param_bytes, p.layers[i].param_bytes);
  }
  EXPECT_EQ(convs, 16);  // VGG-16: 13 convolutions, 3 fully connected
  EXPECT_EQ(q.device, "a100-80g");
  ASSERT_EQ(q.assumptions.size(), 2u);  // the profiled minibatch, then this
  EXPECT_NE(q.assumptions[1].find("v100-32g re-targeted to a100-80g: 16 compute-bound layers"), std::string::npos);
  EXPECT_NE(q.assumptions[1].find(std::to_string(others) + " memory-bound layers"), std::string::npos);
}

TEST(ProfileRetarget, JobFileProfilesResolveRelativeToTheJobAndAreRetargeted) {
  auto dir = std::filesystem::temp_directory_path() / ("pw_profile_job_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "jobs");
  ModelProfile measured = load_profile_file(pipedream_graph_path("resnet18"), 0);
  save_profile_pipedream(measured, (dir / "resnet18.txt").string());
  std::ofstream(dir / "jobs" / "job.json") << R"({
    "name": "r18", "model": {"kind": "profile", "profile": "../resnet18.txt", "profile_device": "v100-32g"},
    "training": {"batch_size": 128, "microbatch_size": 32},
    "cluster": {"devices": 4, "device": "h200"}, "pipeline": {"stages": 4}})";
  JobSpec job = load_job((dir / "jobs" / "job.json").string());
  EXPECT_EQ(std::filesystem::path(job.model.profile), (dir / "resnet18.txt").lexically_normal());
  ModelProfile p = job_profile(job);
  ASSERT_EQ(p.size(), measured.size());
  EXPECT_EQ(p.microbatch_size, 32);
  EXPECT_EQ(p.device, "h200");
  ASSERT_EQ(p.assumptions.size(), 3u);
  EXPECT_NE(p.assumptions[1].find("from the profiled minibatch 256 to microbatch 32"), std::string::npos);
  EXPECT_NE(p.assumptions[2].find("v100-32g re-targeted to h200"), std::string::npos);
  // Scaling, then re-targeting: a convolution's time.
  DeviceSpec v100 = *device_preset("v100-32g"), h200 = *device_preset("h200");
  int conv = 0;
  while (measured.layers[conv].type.rfind("Conv2d", 0) != 0) ++conv;
  EXPECT_DOUBLE_EQ(p.layers[conv].fwd_ms, measured.layers[conv].fwd_ms * 32 / 256 * v100.tflops / h200.tflops);

  // Without profile_device the costs stay as measured, and that is said.
  std::ofstream(dir / "jobs" / "job2.json") << R"({
    "name": "r18", "model": {"kind": "profile", "profile": "../resnet18.txt"},
    "cluster": {"devices": 2, "device": "h200"}})";
  ModelProfile q = job_profile(load_job((dir / "jobs" / "job2.json").string()));
  EXPECT_NE(q.assumptions.back().find("device the profile was measured on is unknown"), std::string::npos);

  // A "profile" model needs its file.
  try {
    parse_job(nlohmann::json::parse(R"({"name": "x", "model": {"kind": "profile"}})"));
    ADD_FAILURE() << "accepted a profile model without a file";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("model.profile"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// The example jobs name the shipped profiles by a path relative to the job
// file, which holds in the source tree and where both are installed
// (share/pipewright/{jobs,profiles}).
TEST(ProfileRetarget, ShippedPipeDreamJobsFindTheShippedProfiles) {
  const std::string jobs = std::string(PW_SOURCE_DIR) + "/resources/jobs/pipedream/";
  for (auto [job_file, model] : {std::pair{"vgg16-profile-4gpu.json", "vgg16"},
                                 std::pair{"resnet50-profile-8gpu-a100.json", "resnet50"}}) {
    SCOPED_TRACE(job_file);
    JobSpec job = load_job(jobs + job_file);
    EXPECT_EQ(std::filesystem::path(job.model.profile),
              std::filesystem::path(pipedream_graph_path(model)).lexically_normal());
    EXPECT_EQ(job_profile(job).size(), load_profile_file(pipedream_graph_path(model), 0).size());
  }
}
