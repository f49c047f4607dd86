#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/sources/live_run_source.h"
#include "ipc/control.h"
#include "ipc/curve.h"
#include "ipc/publisher.h"
#include "../timing_checks.h"

namespace pw::gui {
namespace {

bool wait_for(const std::function<bool()>& done, int ms) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
  return done();
}

Event ev(int stage, std::int64_t s, EventKind k = EventKind::Forward) {
  Event e;
  e.stage = stage;
  e.start_ns = s;
  e.end_ns = s + 100;
  e.kind = k;
  e.microbatch = static_cast<int>(s / 100);
  return e;
}

// A live run with replicas (issue 39): the source opened on replica 1 shows
// that replica's pipeline, its events and its memory samples, and the model
// counts the replicas it heard.
TEST(LiveRunSource, ShowsTheChosenReplicasEventsAndMemory) {
  ipc::Publisher pub("run-dp");
  pub.set_run_info("live-dp", 2, "run");
  pub.status(RunStatus::Running);
  RunModel model;
  RunFeeder feeder(&model);
  LiveRunSource src(pub.endpoint(), std::nullopt, nullptr, 1);
  EXPECT_EQ(src.replica(), 1);
  feeder.setSource(&src);
  src.start();
  ASSERT_TRUE(wait_for([&] { return src.engineAlive(); }, 5000));
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 100; ++i) {
      Event e = ev(i % 2, i * 100 + r * 7);
      e.replica = static_cast<std::int16_t>(r);
      pub.on_event(e);
    }
  for (int r = 0; r < 2; ++r) {
    MemorySample m;
    m.t_ns = 1000;
    m.stage = 0;
    m.replica = static_cast<std::int16_t>(r);
    m.bytes = (r + 1) << 20;
    pub.memory(m);
  }
  pub.status(RunStatus::Finished);
  ASSERT_TRUE(wait_for([&] { return model.finished(); }, 5000));
  EXPECT_EQ(model.info().replica, 1);
  EXPECT_EQ(model.eventCount(), 100u);  // replica 1's alone
  EXPECT_EQ(model.track(0, TrackRow::Compute).min_start(), 7);
  ASSERT_EQ(model.memory(0).size(), 1u);
  EXPECT_EQ(model.memory(0)[0].bytes, 2 << 20);
  EXPECT_EQ(model.info().recorded_replicas, 2);
}

TEST(LiveRunSource, ReceivesTelemetryControlsTheRunAndNoticesItsDeath) {
  auto pub = std::make_unique<ipc::Publisher>("run-1");
  std::atomic<int> pauses{0}, replans{0};
  ipc::ControlServer server(
      [&](const ipc::pb::ControlRequest& r) {
        ipc::pb::ControlReply reply;
        if (r.has_pause()) ++pauses;
        if (r.has_rebalance()) ++replans;
        return reply;
      },
      pub.get());
  pub->set_control_endpoint(server.endpoint());
  pub->set_run_info("live-test", 2, "run");
  pub->status(RunStatus::Running);
  pub->plan(1, 0, "initial", to_json(uniform_partition(8, 2)));

  RunModel model;
  RunFeeder feeder(&model);
  LiveRunSource src(pub->endpoint());
  QSignalSpy failed(&src, &RunSource::failed);
  feeder.setSource(&src);
  src.start();
  ASSERT_TRUE(wait_for([&] { return src.engineAlive(); }, 5000));
  // Late joiners miss what was sent before they connected: publish after.
  for (int i = 0; i < 500; ++i) pub->on_event(ev(i % 2, i * 100));
  pub->on_memory(0, 1000, 1 << 20);
  ASSERT_TRUE(wait_for([&] { return model.eventCount() == 500 && model.stageCount() == 2 && !model.memory(0).empty(); }, 5000))
      << model.eventCount();
  EXPECT_EQ(model.stageCount(), 2);
  EXPECT_EQ(model.info().name, "live-test");  // sent before we joined: from the snapshot
  ASSERT_EQ(model.plans().size(), 1u);
  EXPECT_EQ(model.plans()[0].plan.stages.size(), 2u);
  EXPECT_EQ(model.memoryAt(0, 2000), 1 << 20);

  src.pause();
  src.rebalance();
  ASSERT_TRUE(wait_for([&] { return pauses == 1 && replans == 1; }, 5000));

  // The engine dies without a word: within a few seconds the source says so.
  QElapsedTimer t;
  t.start();
  pub.reset();
  ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, 6000));
  if (::pw::test::timing_checks()) EXPECT_LT(t.elapsed(), LiveRunSource::kSilenceMs + 1500);
  EXPECT_FALSE(src.engineAlive());
  EXPECT_TRUE(failed[0][0].toString().contains("gone"));
  EXPECT_TRUE(src.description().contains("not responding"));
}

TEST(LiveRunSource, NothingListeningFailsWithinSeconds) {
  LiveRunSource src("tcp://127.0.0.1:1");  // nothing publishes there
  QSignalSpy failed(&src, &RunSource::failed);
  src.start();
  ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, LiveRunSource::kSilenceMs + 3000));
  EXPECT_TRUE(failed[0][0].toString().contains("no telemetry"));
}

// A coordinator beyond loopback authenticates with CURVE: the right key
// files receive its telemetry and reach its control socket; a key it never
// authorized gets nothing, and the source says so within seconds instead
// of waiting forever.
TEST(LiveRunSource, CurveRightKeyReceivesWrongKeyIsRefusedInSeconds) {
  std::string dir = (std::filesystem::temp_directory_path() / ("pw_studio_curve_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  ipc::write_curve_key_dir(dir);
  ipc::set_curve_refusal_logger([](const std::string&) {});  // refusals are expected here
  ipc::CurveServer server_keys = ipc::curve_server_from_dir(dir);
  ipc::PublisherOptions po;
  po.curve = server_keys;
  ipc::Publisher pub("run-curve", po);
  std::atomic<int> pauses{0};
  ipc::ControlServerOptions co;
  co.curve = server_keys;
  ipc::ControlServer ctl(
      [&](const ipc::pb::ControlRequest& r) {
        if (r.has_pause()) ++pauses;
        return ipc::pb::ControlReply();
      },
      &pub, co);
  pub.set_control_endpoint(ctl.endpoint());
  pub.set_run_info("curve-test", 2, "run");
  pub.status(RunStatus::Running);

  {
    RunModel model;
    RunFeeder feeder(&model);
    LiveRunSource src(pub.endpoint(), ipc::curve_client_from_files(dir + "/server.pub", dir + "/client.key"));
    feeder.setSource(&src);
    src.start();
    ASSERT_TRUE(wait_for([&] { return src.engineAlive(); }, 5000));
    for (int i = 0; i < 100; ++i) pub.on_event(ev(i % 2, i * 100));
    ASSERT_TRUE(wait_for([&] { return model.eventCount() == 100; }, 5000)) << model.eventCount();
    EXPECT_EQ(model.info().name, "curve-test");
    src.pause();
    ASSERT_TRUE(wait_for([&] { return pauses == 1; }, 5000));
    src.stop();
  }
  {
    ipc::CurveClient wrong = ipc::curve_client_from_files(dir + "/server.pub", dir + "/client.key");
    wrong.keys = ipc::generate_curve_keys();  // never authorized
    LiveRunSource src(pub.endpoint(), wrong);
    QSignalSpy failed(&src, &RunSource::failed);
    QElapsedTimer t;
    t.start();
    src.start();
    ASSERT_TRUE(wait_for([&] { return failed.count() > 0; }, LiveRunSource::kSilenceMs + 3000));
    if (::pw::test::timing_checks()) EXPECT_LT(t.elapsed(), LiveRunSource::kSilenceMs + 2000);
    EXPECT_FALSE(src.engineAlive());
    EXPECT_TRUE(failed[0][0].toString().contains("refused")) << failed[0][0].toString().toStdString();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::gui
