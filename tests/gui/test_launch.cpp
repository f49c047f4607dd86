// The studio launching a real `pipewright run` (libtorch workers) as its
// child, on the offscreen platform: the live views fill from the engine's
// telemetry and the run ends as finished; a killed engine shows as failed
// within 3 s, a stopped one as stopped, one that cannot start as failed;
// and the GUI thread keeps turning meanwhile (no stall over 500 ms). The
// two wall-clock bounds hold only on a quiet machine: checked under the
// `timing` label (gui.launch.timing, tests/timing_checks.h), the rest on
// every run. Needs the pipewright binary (PW_PIPEWRIGHT) and a job (PW_TINY_JOB).
#include <signal.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <qcustomplot.h>

#include "gui/models/engine_process.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/run_launcher.h"
#include "gui/widgets/throughput_view.h"
#include "tests/gui/view_test_util.h"
#include "../timing_checks.h"

using namespace pw;
using namespace pw::gui;
using namespace pw::gui::test;

namespace {

// Longest gap between GUI-thread timer ticks while it runs: the studio
// must not block its event loop on the engine.
class StallProbe : public QObject {
 public:
  StallProbe() {
    timer_.setInterval(10);
    connect(&timer_, &QTimer::timeout, this, [this] {
      if (clock_.isValid()) worst_ = std::max(worst_, clock_.elapsed());
      clock_.restart();
    });
    timer_.start();
  }
  qint64 worstMs() const { return worst_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 worst_ = 0;
};

}  // namespace

class StudioLaunchTest : public QObject {
  Q_OBJECT
  QString program_, job_;
  QTemporaryDir dir_;

  LaunchRequest request(const QString& name, int iterations) {
    LaunchRequest r;
    r.program = program_;
    r.job_file = job_;
    r.run_dir = dir_.path() + "/" + name;
    r.arguments = EngineProcess::runArguments(job_, r.run_dir, r.run_dir + "/run.db");
    r.arguments << "--threads" << "1" << "--set" << QStringLiteral("training.iterations=%1").arg(iterations);
    return r;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("PipewrightTest");
    QCoreApplication::setApplicationName("studio-launch-test");
    program_ = qEnvironmentVariable("PW_PIPEWRIGHT");
    job_ = qEnvironmentVariable("PW_TINY_JOB");
    if (program_.isEmpty() || !QFileInfo(program_).isExecutable()) QSKIP("PW_PIPEWRIGHT does not name the pipewright binary");
    QVERIFY2(QFileInfo(job_).isFile(), "PW_TINY_JOB does not name a job file");
    QVERIFY(dir_.isValid());
  }

  void launchedRunFillsTheLiveViewsAndFinishes() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    StallProbe probe;
    LaunchRequest req = request("finishes", 40);
    QVERIFY(w.launch(req));
    QVERIFY(!w.launch(req));  // one engine at a time
    QVERIFY2(wait_until([&] { return !w.engine()->endpoint().isEmpty(); }, 60000), "the engine never said where it publishes");
    QVERIFY(w.engine()->endpoint().startsWith("tcp://127.0.0.1:"));
    QVERIFY2(wait_until([&] { return w.run()->eventCount() > 0; }, 30000), qPrintable(w.statusText()));
    QVERIFY(w.source() && w.source()->canControl());
    QVERIFY2(wait_until([&] { return w.run()->status() != RunStatus::Running; }, 90000), qPrintable(w.statusText()));
    QCOMPARE(w.run()->status(), RunStatus::Finished);
    QVERIFY(w.run()->finished());
    // The engine reports the end, then tidies up and exits 0.
    QVERIFY(wait_until([&] { return !w.engine()->isRunning(); }, 15000));

    // What arrived: 2 stages' events, one throughput report per iteration
    // (the engine's own), the initial plan.
    QCOMPARE(w.run()->stageCount(), 2);
    QVERIFY(w.run()->eventCount() >= 40u * 2 * 2);
    auto tp = w.run()->throughput();
    QVERIFY2(tp.size() >= 30 && tp.size() <= 40, qPrintable(QString::number(tp.size())));
    QVERIFY(std::any_of(tp.begin(), tp.end(), [](const ThroughputSample& t) { return t.samples_per_s > 0; }));
    QVERIFY(!w.run()->plans().empty());
    // The samples are on the run's clock: inside the span of its events,
    // so the throughput view draws them where the timeline is.
    for (const auto& t : tp)
      QVERIFY2(t.t_ns >= w.run()->beginNs() && t.t_ns <= w.run()->endNs() + 1'000'000'000,
               qPrintable(QStringLiteral("throughput sample at %1 ns, events span [%2, %3]")
                              .arg(t.t_ns).arg(w.run()->beginNs()).arg(w.run()->endNs())));
    QCustomPlot* tplot = w.throughputView()->plot();
    tplot->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(tplot->graphCount() == 1);
    int shown = 0;
    for (auto it = tplot->graph(0)->data()->constBegin(); it != tplot->graph(0)->data()->constEnd(); ++it)
      shown += tplot->xAxis->range().contains(it->key) && tplot->yAxis->range().contains(it->value);
    QVERIFY2(shown >= static_cast<int>(tp.size()) - 1, qPrintable(QStringLiteral("%1 of %2 throughput points in view").arg(shown).arg(tp.size())));
    QVERIFY(QFileInfo(req.run_dir + "/run.db").size() > 0);
    QVERIFY2(w.statusText().contains("finished"), qPrintable(w.statusText()));
    if (::pw::test::timing_checks())
      QVERIFY2(probe.worstMs() < 500, qPrintable(QString("GUI thread stalled %1 ms").arg(probe.worstMs())));
    qInfo("GUI thread's longest stall during the run: %lld ms", probe.worstMs());
    w.showTab("monitor");
    screenshot(&w, "studio-launched-run");
    screenshot(w.throughputView(), "studio-launched-run-throughput");

    // Replay of the recorded run: the same throughput, on the same clock.
    QVERIFY(w.openFile(req.run_dir + "/run.db"));
    QVERIFY(wait_until([&] { return w.run()->finished(); }, 10000));
    auto replayed = w.run()->throughput();
    QCOMPARE(replayed.size(), tp.size());
    for (const auto& t : replayed) QVERIFY(t.t_ns >= w.run()->beginNs() && t.t_ns <= w.run()->endNs() + 1'000'000'000);
  }

  // Pause from the studio: the engine holds every stage, the status bar
  // says paused and no events arrive; resume: it trains on and finishes.
  void pausedRunShowsPausedThenResumesAndFinishes() {
    MainWindow w;
    w.show();
    QVERIFY(w.launch(request("paused", 400)));
    QVERIFY2(wait_until([&] { return w.run()->eventCount() > 0 && w.source() && w.source()->canControl(); }, 60000),
             qPrintable(w.statusText()));
    w.pauseRun();
    QVERIFY2(wait_until([&] { return w.run()->paused(); }, 15000), qPrintable(w.statusText()));
    QVERIFY2(wait_until([&] { return w.statusText().contains("paused"); }, 2000), qPrintable(w.statusText()));
    QCOMPARE(w.run()->status(), RunStatus::Running);
    QTest::qWait(300);  // what was in flight at the pause
    const std::size_t held = w.run()->eventCount();
    QTest::qWait(1000);
    QCOMPARE(w.run()->eventCount(), held);
    screenshot(&w, "studio-paused-run");
    w.resumeRun();
    QVERIFY2(wait_until([&] { return !w.run()->paused(); }, 15000), qPrintable(w.statusText()));
    QVERIFY2(wait_until([&] { return w.run()->eventCount() > held; }, 15000), qPrintable(w.statusText()));
    QVERIFY2(wait_until([&] { return w.run()->status() != RunStatus::Running; }, 120000), qPrintable(w.statusText()));
    QCOMPARE(w.run()->status(), RunStatus::Finished);
    QVERIFY(wait_until([&] { return !w.engine()->isRunning(); }, 15000));
  }

  void killedEngineShowsDeadWithinThreeSeconds() {
    MainWindow w;
    w.show();
    StallProbe probe;
    QVERIFY(w.launch(request("killed", 100000)));
    QVERIFY2(wait_until([&] { return w.run()->eventCount() > 0; }, 60000), qPrintable(w.statusText()));
    QElapsedTimer since_kill;
    ::kill(static_cast<pid_t>(w.engine()->pid()), SIGKILL);
    since_kill.start();
    QVERIFY2(wait_until([&] { return w.run()->status() != RunStatus::Running; }, 30000), qPrintable(w.statusText()));
    const qint64 noticed_ms = since_kill.elapsed();
    QCOMPARE(w.run()->status(), RunStatus::Failed);
    qInfo("killed engine shown dead after %lld ms", noticed_ms);
    if (::pw::test::timing_checks()) QVERIFY2(noticed_ms < 3000, qPrintable(QString("noticed after %1 ms").arg(noticed_ms)));
    QVERIFY2(w.statusText().contains("failed"), qPrintable(w.statusText()));
    QVERIFY(!w.source()->isRunning());
    if (::pw::test::timing_checks())
      QVERIFY2(probe.worstMs() < 500, qPrintable(QString("GUI thread stalled %1 ms").arg(probe.worstMs())));
  }

  void stoppedEngineShowsStopped() {
    MainWindow w;
    QVERIFY(w.launch(request("stopped", 100000)));
    QVERIFY2(wait_until([&] { return w.run()->eventCount() > 0; }, 60000), qPrintable(w.statusText()));
    w.stopRun();
    // Graceful stop over the control socket, else SIGTERM after 3 s, SIGKILL 3 s later.
    QVERIFY2(wait_until([&] { return !w.engine()->isRunning(); }, 3000 + EngineProcess::kKillAfterMs + 3000), "the engine outlived stop");
    QVERIFY(wait_until([&] { return w.run()->finished(); }, 2000));
    QCOMPARE(w.run()->status(), RunStatus::Stopped);
  }

  void engineThatCannotStartShowsFailed() {
    MainWindow w;
    LaunchRequest r = request("missing", 1);
    r.program = dir_.path() + "/no-such-pipewright";
    QVERIFY(w.launch(r));
    QVERIFY(wait_until([&] { return w.run()->status() != RunStatus::Running; }, 3000));
    QCOMPARE(w.run()->status(), RunStatus::Failed);
    QVERIFY2(QString::fromStdString(w.run()->statusReason()).contains("no-such-pipewright"), w.run()->statusReason().c_str());
  }

  void badJobShowsTheEnginesError() {
    MainWindow w;
    LaunchRequest r = request("bad", 1);
    r.arguments << "--set" << "pipeline.stages=0";
    QVERIFY(w.launch(r));
    QVERIFY(wait_until([&] { return w.run()->status() != RunStatus::Running; }, 20000));
    QCOMPARE(w.run()->status(), RunStatus::Failed);
    QVERIFY2(QString::fromStdString(w.run()->statusReason()).contains("stages"), w.run()->statusReason().c_str());
  }
};

QTEST_MAIN(StudioLaunchTest)
#include "test_launch.moc"
