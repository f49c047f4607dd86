// Pipeline training must compute exactly what one process computes with
// gradient accumulation: the reference loop below is plain libtorch.
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include "pipedream_reference.h"
#include "reference_loop.h"
#include "run_helpers.h"
#include "runtime/data.h"
#include "core/plan/plan.h"
#include "runtime/layers.h"

namespace pw::rt {
namespace {
using namespace testing;


void expect_same(const Reference& ref, const RunResult& run, const std::string& dir, int stages) {
  ASSERT_EQ(run.exit_code, 0) << run.error;
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
  auto w = run_weights(dir, stages);
  ASSERT_EQ(w.size(), ref.weights.size());
  for (size_t i = 0; i < w.size(); ++i) {
    double scale = ref.weights[i].abs().max().item<double>();
    double diff = (w[i] - ref.weights[i]).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5 * scale) << "parameter " << i;
  }
}

struct EquivalenceCase {
  const char* schedule;
  int stages, microbatches;
};

class Equivalence : public ::testing::TestWithParam<EquivalenceCase> {};

TEST_P(Equivalence, SameLossesAndWeightsAsSingleProcessLoop) {
  EquivalenceCase c = GetParam();
  auto doc = mlp_job(c.stages, c.microbatches, c.schedule);
  std::string dir = temp_dir("eq");
  RunResult run = run_job(options(doc, dir));
  Reference ref = reference_loop(parse_job(doc));
  expect_same(ref, run, dir, c.stages);
  std::filesystem::remove_all(dir);
}

// Includes microbatches < stages (a classic deadlock shape).
INSTANTIATE_TEST_SUITE_P(Runtime, Equivalence,
                         ::testing::Values(EquivalenceCase{"gpipe", 2, 4}, EquivalenceCase{"1f1b", 2, 4}, EquivalenceCase{"gpipe", 4, 4},
                                           EquivalenceCase{"1f1b", 4, 6}, EquivalenceCase{"1f1b", 4, 2}),
                         [](const auto& info) {
                           return std::string(info.param.schedule == std::string("gpipe") ? "gpipe" : "onefoneb") +
                                  "_" + std::to_string(info.param.stages) + "stages_" +
                                  std::to_string(info.param.microbatches) + "mb";
                         });

// A cosine learning-rate schedule with warmup steps every stage with the
// rate a single process would use, written out here as its closed form.
TEST(Equivalence, CosineScheduleWithWarmupMatchesTheClosedForm) {
  auto doc = mlp_job(2, 4, "1f1b", {32, 32, 32}, 6);
  doc["training"]["lr_schedule"] = "cosine";
  doc["training"]["warmup"] = 2;
  const double lr = doc["training"]["lr"].get<double>();
  auto lr_at = [&](int it) {
    if (it < 2) return lr * (it + 1) / 2;           // 0.5 lr, lr
    return lr * 0.5 * (1 + std::cos(M_PI * (it - 2) / 4.0));  // lr .. 0 over the last 4
  };
  std::string dir = temp_dir("eq-cosine");
  RunResult run = run_job(options(doc, dir));
  expect_same(reference_loop(parse_job(doc), lr_at), run, dir, 2);
  // And a constant rate would not have matched.
  Reference constant = reference_loop(parse_job(doc));
  EXPECT_NE(constant.losses.back(), run.losses.back());
  std::filesystem::remove_all(dir);
}

// A mismatch must be detectable: another learning rate gives other weights.
TEST(Equivalence, ReferenceDetectsADifferentRun) {
  auto doc = mlp_job(2, 2, "1f1b");
  std::string dir = temp_dir("eqneg");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  doc["training"]["lr"] = 0.02;
  Reference ref = reference_loop(parse_job(doc));
  auto w = run_weights(dir, 2);
  EXPECT_GT((w[0] - ref.weights[0]).abs().max().item<double>(), 1e-4);
  std::filesystem::remove_all(dir);
}

TEST(AsyncOneFOneB, WeightStashingMatchesPipeDreamSemantics) {
  for (int stages : {2, 3}) {
    auto doc = mlp_job(stages, 4, "pipedream");
    std::string dir = temp_dir("async");
    RunResult run = run_job(options(doc, dir));
    Reference ref = pipedream_reference(parse_job(doc));
    expect_same(ref, run, dir, stages);
    std::filesystem::remove_all(dir);
  }
}

TEST(Checkpoint, ResumeGivesBitwiseTheSameWeights) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 5);
  expect_bitwise_resume(doc, "ckpt");
}

}  // namespace
}  // namespace pw::rt
