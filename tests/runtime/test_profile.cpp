// Measured profiles: the planner's structure, the analytic layer
// boundaries, exact parameter bytes, and a file jobs can plan from.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <fstream>

#include "core/calibrate/stage_compute.h"
#include "core/events/event_json.h"
#include "core/job/job_plan.h"
#include "core/model/analytic_profile.h"
#include "core/model/profile_io.h"
#include "run_helpers.h"
#include "runtime/profiler.h"

namespace pw::rt {
namespace {
using namespace testing;

TEST(Profiler, MeasuresEveryAnalyticLayerAndPlansFromTheFile) {
  auto doc = mlp_job(2, 2, "1f1b", {64, 48});
  JobSpec job = parse_job(doc);
  ModelProfile m = measure_profile(job, {3, 1});
  ModelProfile a = analytic_profile(job);
  ASSERT_EQ(m.size(), a.size());
  // Linear in->out, fp32: (in*out + out) * 4 bytes.
  const std::int64_t dims[] = {20, 64, 48, 5};
  for (int l = 0; l < m.size(); ++l) {
    EXPECT_EQ(m.layers[l].name, a.layers[l].name);
    EXPECT_EQ(m.layers[l].param_bytes, std::uint64_t((dims[l] * dims[l + 1] + dims[l + 1]) * 4)) << l;
    EXPECT_EQ(m.layers[l].output_bytes, std::uint64_t(4 * dims[l + 1] * 4)) << l;
    EXPECT_GT(m.layers[l].fwd_ms, 0);
    EXPECT_GT(m.layers[l].bwd_ms, 0);
    // W measured apart (not the unknown -1 the split rule fills in).
    EXPECT_GT(m.layers[l].bwd_weight_ms, 0) << l;
    EXPECT_LE(m.layers[l].bwd_weight_ms, m.layers[l].bwd_ms) << l;
    EXPECT_GE(m.layers[l].activation_bytes, m.layers[l].input_bytes);
  }
  std::string file = temp_dir("profile") + ".json";
  save_profile_file(m, file);
  job.model.profile = file;
  PreparedJob p = prepare_job(job);
  EXPECT_EQ(p.profile.source, "measured");
  EXPECT_EQ(p.plan.layer_count(), m.size());
  std::filesystem::remove(file);
}

// The device a profile is measured on: a stage's (a GPU where libtorch
// sees one, here the CPU), said in the profile; a GPU asked for where there
// is none, or an unknown name, refused by name.
TEST(Profiler, MeasuresOnTheDeviceAStageWouldUseAndSaysWhich) {
  EXPECT_EQ(profile_device("cpu"), c10::Device(c10::kCPU));
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(profile_device("auto"), c10::Device(c10::kCPU));
    try {
      profile_device("cuda");
      ADD_FAILURE() << "cuda without a GPU was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(profile_device("tpu"), std::invalid_argument);
  ProfileOptions o{2, 1};
  o.device = "cpu";
  const ModelProfile m = measure_profile(parse_job(mlp_job(2, 2, "1f1b", {16})), o);
  ASSERT_FALSE(m.assumptions.empty());
  EXPECT_EQ(m.assumptions.back(), "measured on cpu (cpu counting allocator)");
}

// Send costs from a run's events: the mean per message size, fitted as a
// per-message time plus bytes at a rate (worked out here by hand).
TEST(Profiler, CalibratesSendsFromARunsEvents) {
  std::string dir = temp_dir("calibrate");
  std::filesystem::create_directories(dir + "/events");
  {
    std::ofstream f(dir + "/events/stage0.jsonl");
    auto send = [&](std::int64_t bytes, std::int64_t us) {
      f << nlohmann::json{{"kind", "send"}, {"bytes", bytes}, {"start_ns", 1000}, {"end_ns", 1000 + us * 1000}}.dump()
        << "\n";
    };
    // 1 MB messages take 100, 100 and 400 us (a mean of 200), 3 MB 400 us:
    // 100 us per message plus 2 MB per 200 us = 80 Gbit/s.
    for (std::int64_t us : {100, 100, 400}) send(1000000, us);
    for (std::int64_t us : {400, 400}) send(3000000, us);
    f << nlohmann::json{{"kind", "forward"}, {"bytes", 0}, {"start_ns", 0}, {"end_ns", 9000000}}.dump() << "\n";
  }
  LinkProfile base;
  base.gbps = 10;
  LinkProfile l = calibrate_sends(dir, base);
  EXPECT_NEAR(l.send_cpu_us, 100.0, 1e-6);
  EXPECT_NEAR(l.send_cpu_gbps, 80.0, 1e-6);
  EXPECT_EQ(l.gbps, 10);  // the wire is not the sender's business
  std::filesystem::remove_all(dir);
}


// Calibration reads forward and backward events as the stage's compute: a
// backward's gradient send and an optimizer step's wait for outstanding
// sends are their own time, not inside those events.
TEST(Profiler, ARunsComputeEventsHoldNoCommunication) {
  std::string dir = temp_dir("compute-events");
  auto r = run_job(options(mlp_job(2, 4, "1f1b", {64, 64}, 4), dir));
  ASSERT_EQ(r.exit_code, 0) << r.error;
  std::vector<Event> events = read_event_files(dir);
  int gradient_sends = 0;
  for (const auto& e : events) {
    if (e.stage != 1 || e.kind != EventKind::Send) continue;
    // Stage 1 is last: its only sends are gradients.
    ++gradient_sends;
    for (const auto& b : events)
      if (b.stage == 1 && b.kind == EventKind::Backward && b.microbatch == e.microbatch && b.start_ns <= e.start_ns)
        EXPECT_LE(b.end_ns, e.start_ns) << "the send of microbatch " << e.microbatch << " lies inside its backward";
  }
  EXPECT_EQ(gradient_sends, 4 * 4);
  auto m = measure_stage_compute(events);
  ASSERT_EQ(m.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(m[s].range.first_layer, r.plan.stages[s].first_layer);
    EXPECT_EQ(m[s].range.last_layer, r.plan.stages[s].last_layer);
    EXPECT_EQ(m[s].microbatches, 3 * 4);  // the first iteration is left out
    EXPECT_GT(m[s].fwd_ms, 0);
    EXPECT_GT(m[s].bwd_ms, 0);
    EXPECT_GT(m[s].optimizer_ms, 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::rt
