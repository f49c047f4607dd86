#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <fstream>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/job_spec.h"
#include "db/run_writer.h"
#include "gui/models/explain_model.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_iteration.h"
#include "gui/sources/db_run_source.h"

namespace pw::gui {
namespace {

bool wait_for(const std::function<bool()>& done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
  return done();
}

JobSpec job() {
  return parse_job(nlohmann::json::parse(R"({"name": "rec", "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 1, "param_mb": 1, "output_mb": 1}, "training": {"batch_size": 8,
      "microbatch_size": 2}, "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
}

TEST(DbRunSource, OpensARecordedRunWithEverything) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("run.pwrun.sqlite").toStdString();
  JobSpec j = job();
  SimulatedIteration it = simulate_iteration(prepare_job(j));
  RunBatch all = repeat_iteration(it, 5);
  {
    db::RunWriter w(path, {.name = "rec", .stages = 4});
    w.job(j.raw);
    w.plan(1, 0, "initial", to_json(it.plan.plan));
    for (const auto& e : all.events) w.on_event(e);
    for (const auto& m : all.memory) w.memory(m);
    w.migration({.start_ns = 10, .end_ns = 20, .layer = 3, .from_stage = 0, .to_stage = 1, .bytes = 64, .plan_version = 2});
    w.finish(RunStatus::Finished);
  }
  RunModel model;
  RunFeeder feeder(&model);
  DbRunSource src(path);
  feeder.setSource(&src);
  src.start();
  ASSERT_TRUE(wait_for([&] { return model.finished(); }, 10000));
  EXPECT_EQ(model.eventCount(), all.events.size());
  EXPECT_EQ(model.info().name, "rec");
  EXPECT_EQ(model.info().microbatch_size, 2);
  EXPECT_EQ(model.memoryBudget(0), static_cast<std::int64_t>(j.cluster.device.memory_bytes));
  ASSERT_EQ(model.plans().size(), 1u);
  EXPECT_EQ(model.plans()[0].plan.stages.size(), 4u);
  ASSERT_EQ(model.migrations().size(), 1u);
  EXPECT_EQ(model.migrations()[0].layer, 3);
  std::size_t samples = 0;
  for (int s = 0; s < model.stageCount(); ++s) samples += model.memory(s).size();
  EXPECT_EQ(samples, all.memory.size());
  // The same events, in the same tracks, as the run built directly.
  RunModel direct;
  direct.append(all);
  for (int s = 0; s < 4; ++s)
    for (int r = 0; r < kTrackRowCount; ++r) {
      const auto& a = model.track(s, static_cast<TrackRow>(r));
      const auto& b = direct.track(s, static_cast<TrackRow>(r));
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.start(i), b.start(i));
    }
}

// Memory samples carry their replica (issue 39): the source opened on
// replica r hands the model r's samples alone, as it does r's events; a
// model fed every replica's samples (a live run's telemetry) keeps its
// shown replica's and counts the others as recorded replicas.
TEST(DbRunSource, MemoryOfTheChosenReplicaOnly) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("dp.pwrun.sqlite").toStdString();
  RunBatch mixed;
  {
    db::RunWriter w(path, {.name = "dp", .stages = 2});
    for (int r = 0; r < 3; ++r)
      for (int st = 0; st < 2; ++st)
        for (int k = 0; k < 5; ++k) {
          MemorySample m;
          m.t_ns = 1000 * k + r;
          m.stage = st;
          m.replica = static_cast<std::int16_t>(r);
          m.bytes = 1000000 * (r + 1) + 1000 * st + k;  // whose it is, readable from the figure
          w.memory(m);
          mixed.memory.push_back(m);
          Event e;  // one event per replica and stage: the source knows the replicas from events
          e.stage = st;
          e.replica = m.replica;
          e.kind = EventKind::Forward;
          e.start_ns = m.t_ns;
          e.end_ns = m.t_ns + 10;
          if (k == 0) w.on_event(e);
        }
    w.finish(RunStatus::Finished);
  }
  for (int r : {0, 2}) {
    RunModel model;
    RunFeeder feeder(&model);
    DbRunSource src(path, 0, nullptr, r);
    feeder.setSource(&src);
    src.start();
    ASSERT_TRUE(wait_for([&] { return model.finished(); }, 10000));
    EXPECT_EQ(model.info().replica, r);
    for (int st = 0; st < 2; ++st) {
      ASSERT_EQ(model.memory(st).size(), 5u) << "replica " << r << " stage " << st;
      for (int k = 0; k < 5; ++k) EXPECT_EQ(model.memory(st)[k].bytes, 1000000 * (r + 1) + 1000 * st + k);
    }
  }
  RunModel live;
  live.append(mixed);
  for (int st = 0; st < 2; ++st) {
    ASSERT_EQ(live.memory(st).size(), 5u);
    for (const auto& m : live.memory(st)) EXPECT_EQ(m.replica, 0);
  }
  EXPECT_EQ(live.info().recorded_replicas, 3);
}

// "Show predicted" reads what the run recorded: job, profile and plans in
// time order, or which of them is missing.
TEST(DbRunSource, RecordedPredictionInputsOrWhyNot) {
  QTemporaryDir dir;
  JobSpec j = job();
  PreparedJob p = prepare_job(j);
  Plan moved = p.plan;
  moved.stages = {{0, 2}, {3, 4}, {5, 6}, {7, 7}};
  const std::string full = dir.filePath("full.sqlite").toStdString(), bare = dir.filePath("bare.sqlite").toStdString();
  {
    db::RunWriter w(full, {.name = "rec", .stages = 4});
    w.job(j.raw);
    w.profile(profile_to_json(p.profile));
    w.plan(1, 0, "initial", to_json(p.plan));
    w.plan(2, 5'000'000, "replanned", to_json(moved));
    w.finish(RunStatus::Finished);
  }
  {
    db::RunWriter w(bare, {.name = "bare", .stages = 4});
    w.job(j.raw);
    w.plan(1, 0, "initial", to_json(p.plan));
    w.finish(RunStatus::Finished);
  }
  PredictionSource got = recorded_prediction(full);
  ASSERT_TRUE(got.inputs) << got.none_reason.toStdString();
  EXPECT_EQ(got.inputs->job.name, "rec");
  EXPECT_EQ(got.inputs->profile.layers.size(), p.profile.layers.size());
  ASSERT_EQ(got.inputs->plans.size(), 2u);
  EXPECT_EQ(got.inputs->plans[1].version, 2);
  EXPECT_EQ(got.inputs->plans[1].t_ns, 5'000'000);
  EXPECT_EQ(got.inputs->plans[1].plan.stages[0].last_layer, 2);
  PredictionSource none = recorded_prediction(bare);
  EXPECT_FALSE(none.inputs);
  EXPECT_EQ(none.none_reason, QStringLiteral("the run recorded no profile"));
}

TEST(DbRunSource, BadFilesFailWithAReason) {
  QTemporaryDir dir;
  const std::string junk = dir.filePath("junk.db").toStdString();
  std::ofstream(junk) << "this is not sqlite";
  for (const std::string& path : {junk, dir.filePath("missing.db").toStdString()}) {
    DbRunSource src(path);
    QSignalSpy failed(&src, &RunSource::failed);
    src.start();
    ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, 5000)) << path;
    EXPECT_FALSE(failed[0][0].toString().isEmpty());
  }
  // Waiting for an engine that never writes its database gives up.
  DbRunSource waiting(dir.filePath("never.db").toStdString(), 300);
  QSignalSpy failed(&waiting, &RunSource::failed);
  waiting.start();
  ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, 5000));
  EXPECT_TRUE(failed[0][0].toString().contains("no run database"));
}

}  // namespace
}  // namespace pw::gui
