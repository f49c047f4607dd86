// The host time per action closed on a run's measured iteration
// (core/calibrate/overhead_closure.h): on one stage every action but the
// last is followed by the overhead, so an iteration of m microbatches pays
// it 2m times (m forwards, m backwards, before the optimizer step) — a
// closed form computed here, not by the code under test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/calibrate/host_costs.h"
#include "core/calibrate/overhead_closure.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"

namespace pw {
namespace {

JobSpec job(int stages, int microbatch, double overhead_us = 0) {
  nlohmann::json j = nlohmann::json::parse(R"({"name": "c", "model": {"kind": "gpt", "layers": 8, "hidden": 256,
      "heads": 4, "seq_len": 128, "vocab": 1000},
    "training": {"iterations": 1, "batch_size": 32}, "cluster": {"device": "cpu"},
    "pipeline": {"planner": "uniform", "schedule": "1f1b"}})");
  j["pipeline"]["stages"] = stages;
  j["cluster"]["devices"] = stages;
  j["training"]["microbatch_size"] = microbatch;
  j["cluster"]["action_overhead_us"] = overhead_us;
  return parse_job(j);
}

double simulated_ms(const JobSpec& j) { return prepare_job(j).plan.iteration_time_ms; }

TEST(OverheadClosure, OneStagePaysItTwiceEachMicrobatch) {
  for (int b : {1, 4, 8}) {
    SCOPED_TRACE("microbatch " + std::to_string(b));
    const JobSpec bare = job(1, b);
    const PreparedJob p = prepare_job(bare);
    const int m = 32 / b;
    const double t0 = p.plan.iteration_time_ms;
    ASSERT_GT(t0, 0);
    for (double us : {5.0, 120.0, 2500.0}) {
      const double measured = t0 + 2 * m * us * 1e-3;
      auto closed = close_action_overhead_us(bare, p.plan, measured);
      ASSERT_TRUE(closed);
      EXPECT_NEAR(*closed, us, 0.1) << "measured " << measured << " ms";
    }
  }
}

TEST(OverheadClosure, ThePipelineReproducesTheMeasuredIteration) {
  // Two stages: the overhead found makes the simulated iteration the
  // measured one (to the bisection's 0.1 us), whatever the measured time.
  const JobSpec bare = job(2, 4);
  const PreparedJob p = prepare_job(bare);
  for (double factor : {1.1, 1.5, 3.0}) {
    const double measured = p.plan.iteration_time_ms * factor;
    auto closed = close_action_overhead_us(bare, p.plan, measured);
    ASSERT_TRUE(closed);
    EXPECT_GT(*closed, 0);
    EXPECT_NEAR(simulated_ms(job(2, 4, *closed)), measured, 1e-4 * measured) << "x" << factor;
  }
}

TEST(OverheadClosure, ARunFasterThanItsComputeNeedsNoHostTime) {
  const JobSpec bare = job(2, 4);
  const PreparedJob p = prepare_job(bare);
  EXPECT_EQ(close_action_overhead_us(bare, p.plan, p.plan.iteration_time_ms * 0.8), 0.0);
  EXPECT_FALSE(close_action_overhead_us(bare, p.plan, 0));
  EXPECT_FALSE(close_action_overhead_us(bare, p.plan, -1));
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

// What a calibration fitted reaches the job twice: its spec (what plans)
// and its document (what suggestions and the workers re-read).
TEST(HostCosts, AppliedToTheSpecAndItsDocument) {
  JobSpec j = job(2, 4);
  HostCosts costs;
  costs.send = SendCost{120.0, 8.0};
  costs.per_action = {{2, 300.0, 150.0, true}, {8, 100.0, 90.0, true}};
  apply_host_costs(j, costs);
  EXPECT_DOUBLE_EQ(j.cluster.device.send_cpu_us, 120.0);
  EXPECT_DOUBLE_EQ(j.cluster.device.send_cpu_gbps, 8.0);
  EXPECT_DOUBLE_EQ(j.cluster.device.action_overhead_us, 300.0 - 200.0 / 3);  // size 4: a third of the way from 2 to 8
  EXPECT_EQ(j.raw["cluster"]["send_cpu_us"], 120.0);
  EXPECT_EQ(j.raw["cluster"]["action_overhead_us"], (nlohmann::json{{"2", 300.0}, {"8", 100.0}}));
  // The document re-read gives the same job.
  EXPECT_DOUBLE_EQ(parse_job(j.raw).cluster.device.action_overhead_us, 300.0 - 200.0 / 3);
}

}  // namespace
}  // namespace pw
