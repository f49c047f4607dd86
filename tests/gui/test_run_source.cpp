#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>

#include "core/spec/job_spec.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"
#include "../timing_checks.h"

namespace pw::gui {
namespace {

JobSpec job() {
  return parse_job(nlohmann::json::parse(R"({"name": "u", "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 1, "param_mb": 1, "output_mb": 1}, "training": {"batch_size": 8,
      "microbatch_size": 1}, "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
}

bool wait_for(const std::function<bool()>& done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
  return done();
}

TEST(SimulatedRunSource, FeederDeliversTheWholeRunFromTheWorker) {
  RunModel model;
  RunFeeder feeder(&model);
  SimulatedRunSource src(job(), {.iterations = 50, .batch_events = 100});
  QSignalSpy finished(&src, &RunSource::finished);
  feeder.setSource(&src);
  src.start();
  ASSERT_TRUE(wait_for([&] { return model.finished(); }, 10000));
  RunBatch expect = simulate_run(job(), {.iterations = 50});
  EXPECT_EQ(model.eventCount(), expect.events.size());
  EXPECT_EQ(model.stageCount(), 4);
}

TEST(SimulatedRunSource, PacedRunArrivesGraduallyAndStops) {
  RunModel model;
  RunFeeder feeder(&model);
  // 1 simulated ms per wall ms: one iteration of ~30 ms, 1000 of them.
  SimulatedRunSource src(job(), {.iterations = 1000, .speed = 1.0});
  feeder.setSource(&src);
  src.start();
  ASSERT_TRUE(wait_for([&] { return model.eventCount() > 0; }, 5000));
  auto first = model.eventCount();
  ASSERT_TRUE(wait_for([&] { return model.eventCount() > first; }, 5000));
  QElapsedTimer t;
  t.start();
  src.stop();
  if (::pw::test::timing_checks()) EXPECT_LT(t.elapsed(), 500);
  EXPECT_FALSE(model.finished());
  EXPECT_LT(model.endNs(), 1000LL * 30'000'000);
}

TEST(SimulatedRunSource, BadJobReportsFailure) {
  JobSpec j = job();
  SimulatedRunSource src(j, {.planner = "no-such-planner"});
  QSignalSpy failed(&src, &RunSource::failed);
  src.start();
  ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, 5000));
  EXPECT_TRUE(failed[0][0].toString().contains("no-such-planner"));
}

}  // namespace
}  // namespace pw::gui
