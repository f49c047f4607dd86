// The search trade-off (issue 23): the Pareto front of accuracy against
// predicted latency, checked on hand-made points and against the
// definition applied pair by pair; a subnet's predicted latency against
// the FLOP count of its layers worked out here.
#include <gtest/gtest.h>

#include <random>

#include "core/nas/nas_job.h"
#include "core/nas/pareto.h"
#include "core/nas/subnet_cost.h"
#include "core/spec/job_spec.h"

using namespace pw::nas;

namespace {
std::vector<bool> by_definition(const std::vector<TradeoffPoint>& p) {
  std::vector<bool> on(p.size(), true);
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = 0; j < p.size(); ++j) {
      bool no_worse = p[j].accuracy >= p[i].accuracy && p[j].latency_ms <= p[i].latency_ms;
      bool better = p[j].accuracy > p[i].accuracy || p[j].latency_ms < p[i].latency_ms;
      if (no_worse && better) on[i] = false;
    }
  return on;
}
}  // namespace

TEST(NasPareto, HandMadePoints) {
  //            acc   ms
  std::vector<TradeoffPoint> p = {{0.80, 5.0},   // 0 front
                                  {0.70, 2.0},   // 1 front (fastest)
                                  {0.75, 6.0},   // 2 dominated by 0
                                  {0.90, 9.0},   // 3 front (most accurate)
                                  {0.70, 3.0},   // 4 dominated by 1 (same accuracy, slower)
                                  {0.85, 9.0},   // 5 dominated by 3 (same latency, less accurate)
                                  {0.80, 5.0},   // 6 equal to 0: front too
                                  {0.60, 1.0}};  // 7 front
  std::vector<bool> want = {true, true, false, true, false, false, true, true};
  EXPECT_EQ(pareto_front(p), want);
  EXPECT_EQ(pareto_order(p, want), (std::vector<int>{7, 1, 0, 6, 3}));
  EXPECT_TRUE(pareto_front({}).empty());
  EXPECT_EQ(pareto_front({{0.5, 1.0}}), std::vector<bool>{true});
}

TEST(NasPareto, MatchesTheDefinitionOnRandomPoints) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TradeoffPoint> p(1 + rng() % 40);
    // Few distinct values: many ties in either coordinate.
    for (auto& x : p) x = {static_cast<double>(rng() % 6) / 5.0, static_cast<double>(rng() % 7)};
    ASSERT_EQ(pareto_front(p), by_definition(p)) << "trial " << trial;
    auto order = pareto_order(p, pareto_front(p));
    for (size_t i = 1; i < order.size(); ++i) {
      // Along the front, slower never means less accurate.
      EXPECT_LE(p[order[i - 1]].latency_ms, p[order[i]].latency_ms);
      EXPECT_LE(p[order[i - 1]].accuracy, p[order[i]].accuracy);
    }
  }
}

TEST(NasPareto, SubnetLatencyIsTheForwardFlopsOfItsLayersOnTheJobsDevice) {
  auto nj = prepare_nas_job(pw::load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json"));
  // fmnist-supernet: 16 channels, 14x14 after the stem, microbatch 32,
  // kernels {3,5,7} x widths {16,32} then identity; a 0.05 TFLOP/s device.
  const double b = 32, C = 16, area = 14 * 14, tflops = 0.05;
  auto ms = [&](double flops) { return flops / (tflops * 1e12) * 1e3; };
  const double stem = ms(2 * b * 9 * 1 * C * 28 * 28), head = ms(2 * b * C * area * 10);
  auto cell = [&](double k, double w) { return ms(2 * b * area * (k * k * C * w + w * C)); };
  EXPECT_NEAR(subnet_latency_ms(nj.space, {6, 6, 6, 6}), stem + head, 1e-9);  // all identity
  EXPECT_NEAR(subnet_latency_ms(nj.space, {0, 1, 5, 6}), stem + head + cell(3, 16) + cell(3, 32) + cell(7, 32), 1e-9);
  EXPECT_THROW(subnet_latency_ms(nj.space, {0, 1, 2}), std::invalid_argument);
  EXPECT_THROW(subnet_latency_ms(nj.space, {0, 1, 2, 7}), std::invalid_argument);
}
