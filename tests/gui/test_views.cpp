// Studio views on the offscreen platform: open a run, scrub, select a
// range and check its statistics against an independent computation, live
// ingestion, compare, export, and a screenshot of every main view. The
// designer's form: test_designer_form.cpp.
#include <limits>

#include <QApplication>
#include <QDir>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QTreeWidget>
#include <QLineEdit>
#include <QProcess>
#include <QElapsedTimer>
#include <QLabel>
#include <QSpinBox>
#include <QTabWidget>
#include <QScrollBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "core/spec/job_spec.h"
#include "gui/models/job_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"
#include "gui/widgets/compare_widget.h"
#include "gui/models/explain_model.h"
#include "gui/widgets/designer_widget.h"
#include "core/spec/job_fields.h"
#include "core/spec/spec_bounds.h"
#include "gui/widgets/explain_dock.h"
#include "gui/widgets/main_window.h"
#include "studio_window_fixture.h"
#include "gui/widgets/memory_view.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/plot_export.h"
#include "gui/widgets/range_stats_widget.h"
#include "gui/widgets/replay_bar.h"
#include "../timing_checks.h"
#include "gui/widgets/run_launcher.h"
#include "gui/widgets/subnet_graph_view.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_plottable.h"
#include "gui/widgets/timeline_view.h"
#include "tests/gui/view_test_util.h"
#ifdef PW_STUDIO_HAVE_IPC
#include "ipc/curve.h"
#include "ipc/publisher.h"
#endif
#ifdef PW_STUDIO_HAVE_DB
#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "db/run_writer.h"
#include "gui/models/simulated_iteration.h"
#endif

using namespace pw;
using namespace pw::gui;
using namespace pw::gui::test;

namespace {

JobSpec test_job() {
  return parse_job(nlohmann::json::parse(R"({"name": "gpt16-4", "model": {"kind": "gpt", "layers": 16, "hidden": 1024,
      "seq_len": 256}, "training": {"batch_size": 16, "microbatch_size": 2, "clip_grad_norm": 0},
      "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
}


// Busy time and per-kind time of [t0, t1) straight from the event list.
struct Brute {
  double busy_fraction = 0;
  std::int64_t forward = 0, backward = 0;
};
Brute brute(const std::vector<Event>& ev, int stages, std::int64_t t0, std::int64_t t1) {
  Brute b;
  std::int64_t busy = 0;
  for (const auto& e : ev) {
    std::int64_t a = std::max(e.start_ns, t0), z = std::min(e.end_ns, t1);
    if (z <= a) continue;
    if (e.kind == EventKind::Forward) b.forward += z - a;
    if (e.kind == EventKind::Backward) b.backward += z - a;
    if (e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::BackwardInput ||
        e.kind == EventKind::BackwardWeight || e.kind == EventKind::Recompute || e.kind == EventKind::OptimizerStep)
      busy += z - a;
  }
  b.busy_fraction = static_cast<double>(busy) / (static_cast<double>(t1 - t0) * stages);
  return b;
}

}  // namespace

class StudioViewsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    win_ = open_studio_window("studio-views-test");
    QVERIFY(QTest::qWaitForWindowExposed(win_));
  }
  void cleanupTestCase() { delete win_; }

  void hiddenViewsReplotOnlyOnceShown() {
    // A live tick must cost nothing for views nobody sees (the Compare tab,
    // docks tabbed behind others): they replot when shown.
    RunModel m;
    QWidget host;
    auto* tl = new TimelineView(&host);
    tl->resize(600, 300);
    tl->setRun(&m);
    int replots = 0;
    connect(tl->plot(), &QCustomPlot::afterReplot, &host, [&] { ++replots; });
    QCoreApplication::processEvents();  // the plot's own setup
    replots = 0;
    m.append(simulate_run(test_job(), {.iterations = 1}));
    m.waitForLod();
    QCoreApplication::processEvents();
    QCOMPARE(replots, 0);  // never shown
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));
    QTRY_VERIFY(replots >= 1);
    const int shown = replots;
    m.append(simulate_run(test_job(), {.iterations = 1}));
    QTRY_VERIFY(replots > shown);  // visible: every change replots
    m.waitForLod();
    QTest::qWait(100);  // replots the visible view still had queued happen before it hides
    host.hide();
    const int hidden = replots;
    m.append(simulate_run(test_job(), {.iterations = 1}));
    QCoreApplication::processEvents();
    QCOMPARE(replots, hidden);
    host.show();
    QTRY_VERIFY(replots > hidden);
  }

  // Leaving freeze or replay shows the live range at once, not at the
  // next tick (a finished run has none), even after panning while frozen.
  void leavingFreezeJumpsToTheLiveRange() {
    RunModel m;
    QWidget host;
    auto* tl = new TimelineView(&host);
    tl->resize(600, 300);
    tl->setRun(&m);
    m.append(simulate_run(test_job(), {.iterations = 1}));
    const std::int64_t first_end = m.endNs();
    tl->setCursor(first_end - 1);  // frozen
    tl->setVisibleRange(m.beginNs(), m.beginNs() + (first_end - m.beginNs()) / 4);  // inspecting
    RunBatch later = simulate_run(test_job(), {.iterations = 1});
    for (auto& e : later.events) {
      e.start_ns += first_end;
      e.end_ns += first_end;
    }
    m.append(later);  // data keeps arriving
    QVERIFY(m.endNs() > first_end);
    const double key_end = tl->plot()->xAxis->range().upper;
    QVERIFY(key_end < tl->bars()->keyOf(first_end));  // the frozen view did not move
    tl->setCursor(INT64_MAX);  // live again, before any further tick
    QCOMPARE(tl->plot()->xAxis->range().upper, tl->bars()->keyOf(m.endNs()));
    QCOMPARE(tl->plot()->xAxis->range().lower, tl->bars()->keyOf(m.beginNs()));
    // And it keeps following.
    RunBatch more = simulate_run(test_job(), {.iterations = 1});
    const std::int64_t shift = m.endNs();
    for (auto& e : more.events) {
      e.start_ns += shift;
      e.end_ns += shift;
    }
    m.append(more);
    QCOMPARE(tl->plot()->xAxis->range().upper, tl->bars()->keyOf(m.endNs()));
  }

  void opensASimulatedRunAndDrawsIt() {
    win_->setSource(new SimulatedRunSource(test_job(), {.iterations = 6}));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    RunBatch expect = simulate_run(test_job(), {.iterations = 6});
    QCOMPARE(win_->run()->eventCount(), expect.events.size());
    win_->timeline()->zoomToFit();
    win_->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* bars = win_->timeline()->bars();
    QVERIFY(bars->lastDrawnRects() + bars->lastFoldedBlocks() > 0);
    QVERIFY(win_->statusText().contains("events"));
    screenshot(win_, "monitor");
  }

#ifdef PW_STUDIO_HAVE_IPC
  // Run > Attach with CURVE key files (issue 9): the right key follows the
  // coordinator's telemetry; a key it never authorized shows a refusal in
  // the status bar within seconds; a secret key readable by others is
  // refused before connecting.
  void attachesWithCurveKeyFiles() {
    QTemporaryDir tmp;
    const std::string dir = (tmp.path() + "/keys").toStdString(), other = (tmp.path() + "/other").toStdString();
    ipc::write_curve_key_dir(dir);
    ipc::write_curve_key_dir(other);
    ipc::set_curve_refusal_logger([](const std::string&) {});
    ipc::PublisherOptions po;
    po.curve = ipc::curve_server_from_dir(dir);
    ipc::Publisher pub("run-attach", po);
    pub.set_run_info("attached", 2, "run");
    pub.status(RunStatus::Running);
    AttachDialog dialog;
    dialog.setRequest({QString::fromStdString(pub.endpoint()), QString::fromStdString(dir + "/server.pub"),
                       QString::fromStdString(dir + "/client.key")});
    QVERIFY(win_->attach(dialog.request()));
    QVERIFY(wait_until([&] { return win_->source() && win_->statusText().contains("live"); }, 5000));
    bool joined = wait_until([&] {
      Event e;
      e.stage = 1;
      e.start_ns = 0;
      e.end_ns = 10;
      pub.on_event(e);
      pub.status(RunStatus::Running);  // no control server here: no snapshot for a late joiner
      return win_->run()->eventCount() > 0 && !win_->run()->info().name.empty();
    }, 5000);
    QVERIFY2(joined, qPrintable(win_->statusText()));
    QCOMPARE(QString::fromStdString(win_->run()->info().name), QStringLiteral("attached"));
    screenshot(&dialog, "attach-dialog");

    dialog.setRequest({QString::fromStdString(pub.endpoint()), QString::fromStdString(dir + "/server.pub"),
                       QString::fromStdString(other + "/client.key")});
    QElapsedTimer t;
    t.start();
    QVERIFY(win_->attach(dialog.request()));
    QVERIFY2(wait_until([&] { return win_->sourceError().contains("refused"); }, 6000), qPrintable(win_->statusText()));
    if (::pw::test::timing_checks()) QVERIFY(t.elapsed() < 5000);
    QVERIFY(win_->statusText().contains("refused"));
    QCOMPARE(win_->run()->eventCount(), std::size_t(0));

    QFile::setPermissions(QString::fromStdString(other + "/client.key"), QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther);
    QVERIFY(!win_->attach(dialog.request()));
    QVERIFY2(win_->sourceError().contains("readable"), qPrintable(win_->sourceError()));
    win_->setSource(nullptr);
  }
#endif


#ifdef PW_STUDIO_HAVE_DB
  void opensARecordedRun() {
    QTemporaryDir dir;
    const QString path = dir.filePath("recorded.pwrun.sqlite");
    SimulatedIteration it = simulate_iteration(prepare_job(test_job()));
    RunBatch all = repeat_iteration(it, 6);
    {
      db::RunWriter w(path.toStdString(), {.name = "recorded", .stages = 4});
      w.job(test_job().raw);
      w.plan(1, 0, "initial", to_json(it.plan.plan));
      for (const auto& e : all.events) w.on_event(e);
      for (const auto& m : all.memory) w.memory(m);
      w.finish(RunStatus::Finished);
    }
    QVERIFY(win_->openFile(path));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    QCOMPARE(win_->run()->eventCount(), all.events.size());
    QCOMPARE(QString::fromStdString(win_->run()->info().name), QStringLiteral("recorded"));
    QVERIFY(win_->statusText().contains("recorded"));
    // It recorded no profile: nothing to predict with, and the toggle says so.
    win_->explainModel()->waitIdle();
    QAction* predicted = win_->explainDock()->showPredictedAction();
    QVERIFY(!predicted->isEnabled());
    QVERIFY2(predicted->toolTip().contains(QStringLiteral("the run recorded no profile")), qPrintable(predicted->toolTip()));
    // The rest of the tests work on this recorded run.
  }
#endif

  void hoverFindsTheBarUnderTheMouse() {
    auto* tl = win_->timeline();
    const EventTrack& t = win_->run()->track(1, TrackRow::Compute);
    QVERIFY(t.size() > 3);
    // Zoom onto the 3rd compute event of stage 1 and probe its centre.
    tl->setVisibleRange(t.start(2) - 1000, t.end(2) + 1000);
    tl->plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* bars = tl->bars();
    double x = tl->plot()->xAxis->coordToPixel(bars->keyOf((t.start(2) + t.end(2)) / 2));
    double y = tl->plot()->yAxis->coordToPixel(1 - 0.15);
    auto hit = bars->hitAt(QPointF(x, y));
    QVERIFY(hit.has_value());
    QCOMPARE(hit->stage, 1);
    QCOMPARE(hit->index, std::size_t(2));
    QString tip = tl->describe(*hit);
    QVERIFY2(tip.contains(QLatin1String(to_string(t.kind(2)))), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("microbatch %1").arg(t.microbatch(2))));
    QVERIFY(bars->lastDrawnRects() > 0);
  }

  void selectedRangeStatisticsMatchIndependentComputation() {
    RunModel* run = win_->run();
    RunBatch b = simulate_run(test_job(), {.iterations = 6});
    const std::int64_t span = run->endNs() - run->beginNs();
    const std::int64_t t0 = run->beginNs() + span / 5, t1 = run->beginNs() + span * 3 / 5;
    QSignalSpy spy(win_->timeline(), &TimelineView::rangeSelected);
    win_->timeline()->selectRange(t0, t1);
    QCOMPARE(spy.count(), 1);
    const RangeStats& s = win_->rangeStats()->stats();
    Brute x = brute(b.events, 4, t0, t1);
    QVERIFY(std::abs(s.busy_fraction - x.busy_fraction) < 1e-9);
    QCOMPARE(s.kind_ns[static_cast<int>(EventKind::Forward)], x.forward);
    QCOMPARE(s.kind_ns[static_cast<int>(EventKind::Backward)], x.backward);
    QVERIFY(win_->rangeStats()->summaryText().contains(QStringLiteral("%1%").arg(100 * x.busy_fraction, 0, 'f', 1)));
    // The table fits its dock: no column cut off, none of "0 ns" only.
    QApplication::processEvents();
    auto* table = win_->rangeStats()->findChild<QTableWidget*>("rangeTable");
    QVERIFY(table);
    int shown = 0;
    for (int c = 2; c < table->columnCount(); ++c) {
      auto kind = event_kind_from_string(table->horizontalHeaderItem(c)->text().toStdString());
      QVERIFY(kind.has_value());
      QCOMPARE(table->isColumnHidden(c), s.kind_ns[static_cast<int>(*kind)] == 0);
      shown += !table->isColumnHidden(c);
    }
    QVERIFY(shown >= 2);
    QVERIFY2(!table->horizontalScrollBar()->isVisible(),
             qPrintable(QStringLiteral("columns %1 px in a %2 px view").arg(table->horizontalHeader()->length()).arg(table->viewport()->width())));
    screenshot(win_, "monitor-range-selected");
    screenshot(win_->rangeStats(), "range-statistics");
    // Shift+drag selects too.
    auto* plot = win_->timeline()->plot();
    win_->timeline()->zoomToFit();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QRect ar = plot->axisRect()->rect();
    QPoint a(ar.left() + ar.width() / 4, ar.center().y()), z(ar.left() + ar.width() / 2, ar.center().y());
    QTest::mousePress(plot, Qt::LeftButton, Qt::ShiftModifier, a);
    QMouseEvent move(QEvent::MouseMove, z, plot->mapToGlobal(z), Qt::LeftButton, Qt::LeftButton, Qt::ShiftModifier);
    QApplication::sendEvent(plot, &move);
    QTest::mouseRelease(plot, Qt::LeftButton, Qt::ShiftModifier, z);
    QCOMPARE(spy.count(), 2);
    auto sel = win_->timeline()->selection();
    QVERIFY(sel && sel->second > sel->first);
  }

  void scrubbingMovesEveryView() {
    RunModel* run = win_->run();
    const std::int64_t mid = run->beginNs() + (run->endNs() - run->beginNs()) / 2;
    win_->timeline()->zoomToFit();
    win_->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    auto* bars = win_->timeline()->bars();
    std::size_t all = bars->lastDrawnRects() + bars->lastFoldedBlocks();
    win_->replayBar()->setCursor(mid);
    QCOMPARE(win_->timeline()->cursor(), qint64(mid));
    win_->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    std::size_t half = bars->lastDrawnRects() + bars->lastFoldedBlocks();
    QVERIFY2(half < all && half > 0, qPrintable(QStringLiteral("%1 vs %2").arg(half).arg(all)));
    // Nothing after the cursor is hit-testable.
    const EventTrack& t = run->track(0, TrackRow::Compute);
    std::size_t late = t.first_starting_at_or_after(mid + 1);
    QVERIFY(late < t.size());
    QVERIFY(win_->statusText().contains("t ="));
    // Play advances the cursor.
    win_->replayBar()->setSpeed(0.1);
    win_->replayBar()->play();
    QTest::qWait(200);
    QVERIFY(win_->replayBar()->cursor() > mid);
    win_->replayBar()->pause();
    screenshot(win_, "monitor-replay");
    win_->replayBar()->goLive();
    QCOMPARE(win_->timeline()->cursor(), qint64(INT64_MAX));
  }

  void memoryThroughputAndPlanViews() {
    // The legend sits above the lines, never over them.
    auto legend_clear = [&] {
      QCustomPlot* p = win_->memoryView()->plot();
      const QRect legend = p->legend->outerRect(), lines = p->axisRect()->rect();
      return p->legend->visible() && legend.isValid() && !legend.intersects(lines) && legend.bottom() <= lines.top();
    };
    screenshot(win_->memoryView(), "memory");
    QVERIFY(legend_clear());
    win_->memoryView()->setStage(1);
    screenshot(win_->memoryView(), "memory-stage1-by-category");
    QVERIFY(legend_clear());
    win_->memoryView()->setStage(-1);
    auto* tp = win_->throughputView()->plot();
    QVERIFY(tp->graphCount() == 1 && tp->graph(0)->dataCount() > 0);
    screenshot(win_->throughputView(), "throughput");
    QCOMPARE(win_->planView()->rows().size(), std::size_t(1));
    QCOMPARE(win_->planView()->rows()[0].plan.stages.size(), std::size_t(4));
    screenshot(win_->planView(), "plan");
  }

  // The Explain dock (issue 21): bars equal the model's attribution, a
  // click on a legend entry or a bar segment shades exactly that cause's
  // intervals on the timeline, Apply sets the suggestion in the designer.
  void explainDockShowsCausesHighlightsAndApplies() {
    const auto saved = win_->job()->document();
    win_->job()->setDocument(test_job().raw);
    QVERIFY(win_->simulateJob(6));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    ExplainModel* m = win_->explainModel();
    m->waitIdle();
    QApplication::processEvents();
    auto* dockw = win_->findChild<QDockWidget*>(QStringLiteral("dock.explain"));
    QVERIFY(dockw);
    dockw->raise();
    QApplication::processEvents();
    ExplainDock* dock = win_->explainDock();
    QCustomPlot* plot = dock->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const ExplainResult& r = m->result();
    QCOMPARE(r.stages.size(), std::size_t(4));
    QCOMPARE(r.iterations, 6);
    const int fill = static_cast<int>(IdleCause::Fill);
    QCOMPARE(dock->bars(fill)->dataCount(), 4);
    for (int s = 0; s < 4; ++s) {
      QCOMPARE((dock->bars(fill)->data()->constBegin() + s)->value, r.stages[s].cause_ns[fill] / 1e6);
      QCOMPARE((dock->bars(kIdleCauseCount)->data()->constBegin() + s)->value, r.stages[s].compute_ns / 1e6);
    }

    // Legend entry: the cause on every stage.
    auto* item = plot->legend->itemWithPlottable(dock->bars(fill));
    QVERIFY(item);
    QTest::mouseClick(plot, Qt::LeftButton, {}, item->outerRect().center());
    auto same = [](const std::vector<IdleInterval>& a, const std::vector<IdleInterval>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].stage != b[i].stage || a[i].start_ns != b[i].start_ns || a[i].end_ns != b[i].end_ns ||
            a[i].cause != b[i].cause)
          return false;
      return true;
    };
    auto* bars = win_->timeline()->bars();
    QVERIFY(!m->intervalsOf(IdleCause::Fill).empty());
    QVERIFY(same(bars->idleHighlight(), m->intervalsOf(IdleCause::Fill)));
    win_->timeline()->zoomToFit();
    win_->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(bars->lastDrawnIdle(), m->intervalsOf(IdleCause::Fill).size());
    screenshot(win_, "monitor-explain-fill");

    // A bar segment: the cause on that stage only (stage 3's fill sits on its compute).
    const double y = (r.stages[3].compute_ns + r.stages[3].cause_ns[fill] / 2.0) / 1e6;
    QTest::mouseClick(plot, Qt::LeftButton, {},
                      QPoint(qRound(plot->xAxis->coordToPixel(3)), qRound(plot->yAxis->coordToPixel(y))));
    QVERIFY(same(bars->idleHighlight(), m->intervalsOf(IdleCause::Fill, 3)));
    for (const auto& i : bars->idleHighlight()) QCOMPARE(i.stage, 3);
    // Clicking the selection again clears it.
    QTest::mouseClick(plot, Qt::LeftButton, {},
                      QPoint(qRound(plot->xAxis->coordToPixel(3)), qRound(plot->yAxis->coordToPixel(y))));
    QVERIFY(bars->idleHighlight().empty());
    dock->selectCause(IdleCause::Fill, -1);

    // Suggestions for the simulated job; Apply puts the first into the designer.
    QVERIFY(m->suggestionsReady());
    const auto suggestions = m->suggestions().report.suggestions;
    QVERIFY2(!suggestions.empty(), qPrintable(m->suggestions().none_reason));
    QCOMPARE(dock->suggestionsView()->topLevelItemCount(), int(suggestions.size()));
    screenshot(dock, "explain");
    nlohmann::json expect = win_->job()->document();
    for (const auto& o : suggestions.front().overrides) apply_override(expect, o);
    auto* apply = dock->findChild<QPushButton*>(QStringLiteral("applySuggestion0"));
    QVERIFY(apply);
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(win_->job()->document(), expect);
    QVERIFY(win_->job()->isValid());
    dock->clearCause();
    QVERIFY(bars->idleHighlight().empty());
    win_->findChild<QDockWidget*>(QStringLiteral("dock.stats"))->raise();
    win_->job()->setDocument(saved);
  }

#ifdef PW_STUDIO_HAVE_DB
  // Show predicted (issue 21): a recorded run whose last iteration ran
  // stage 2 late from its second action on. The simulator's timeline is
  // drawn in a faded row under each stage, each iteration at the measured
  // one's start, and the first divergence is outlined on both rows.
  void showPredictedDrawsThePredictionUnderTheMeasuredRun() {
    const auto saved = win_->job()->document();
    QTemporaryDir dir;
    const QString path = dir.filePath("late.pwrun.sqlite");
    PreparedJob prepared = prepare_job(test_job());
    SimulatedIteration it = simulate_iteration(prepared);
    const std::int64_t gap = it.period / 10, D = it.period / 8;
    std::vector<Event> events;
    std::vector<std::size_t> stage2;
    for (int k = 0; k < 3; ++k)
      for (Event e : it.events) {
        e.start_ns += k * (it.period + gap), e.end_ns += k * (it.period + gap);
        if (k == 2 && e.stage == 2 && (e.kind == EventKind::Forward || e.kind == EventKind::Backward ||
                                       e.kind == EventKind::OptimizerStep))
          stage2.push_back(events.size());
        events.push_back(e);
      }
    std::sort(stage2.begin(), stage2.end(), [&](std::size_t a, std::size_t b) { return events[a].start_ns < events[b].start_ns; });
    QVERIFY(stage2.size() > 3);
    const Event second = events[stage2[1]];
    for (std::size_t n = 1; n < stage2.size(); ++n) events[stage2[n]].start_ns += D, events[stage2[n]].end_ns += D;
    {
      db::RunWriter w(path.toStdString(), {.name = "late", .stages = 4});
      w.job(test_job().raw);
      w.profile(profile_to_json(prepared.profile));
      w.plan(1, 0, "initial", to_json(prepared.plan));
      for (const auto& e : events) w.on_event(e);
      w.finish(RunStatus::Finished);
    }
    QVERIFY(win_->openFile(path));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    ExplainModel* m = win_->explainModel();
    m->waitIdle();
    QApplication::processEvents();
    QAction* toggle = win_->explainDock()->showPredictedAction();
    QVERIFY(toggle->isEnabled());
    QVERIFY(!toggle->isChecked());
    auto* bars = win_->timeline()->bars();
    QVERIFY(!bars->predicted());
    toggle->trigger();
    m->waitIdle();
    QApplication::processEvents();
    QVERIFY2(m->result().predicted, qPrintable(m->result().predicted_error));
    QCOMPARE(bars->predicted(), m->result().predicted.get());
    const DivergenceMark mark = *bars->predicted()->mark;
    QCOMPARE(mark.divergence.stage, 2);
    QCOMPARE(mark.measured_start_ns, second.start_ns + D);
    QCOMPARE(mark.predicted_start_ns, second.start_ns);
    // The faded row sits under the compute row, inside the stage's lane.
    double ct, cb, pt, pb;
    bars->rowExtent(2, TrackRow::Compute, ct, cb);
    bars->predictedRowExtent(2, pt, pb);
    QVERIFY(cb < pt && pt < pb && ct > 1.5 && pb < 2.5);
    // The last iteration in view: its predicted bars are drawn, and the
    // divergence outlines the measured bar over the predicted one, D apart.
    const std::int64_t t0 = 2 * (it.period + gap);
    win_->timeline()->setVisibleRange(t0 - gap / 2, t0 + it.period + D + gap / 2);
    win_->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(bars->lastDrawnPredicted() > 0);
    QCOMPARE(bars->lastDivergenceRects().size(), std::size_t(2));
    const QRectF mr = bars->lastDivergenceRects()[0], pr = bars->lastDivergenceRects()[1];
    QVERIFY(mr.bottom() <= pr.top() + 1);
    auto* xa = win_->timeline()->plot()->xAxis;
    QVERIFY(std::abs((mr.left() - pr.left()) - (xa->coordToPixel(bars->keyOf(second.start_ns + D)) - xa->coordToPixel(bars->keyOf(second.start_ns)))) < 1.5);
    QVERIFY(win_->explainDock()->findChild<QLabel*>(QStringLiteral("explainSummary"))->text().contains(QStringLiteral("First divergence")));
    win_->findChild<QDockWidget*>(QStringLiteral("dock.explain"))->raise();
    QApplication::processEvents();
    screenshot(win_, "monitor-predicted");
    win_->findChild<QDockWidget*>(QStringLiteral("dock.stats"))->raise();

    // Off: the rows are as before.
    toggle->trigger();
    QApplication::processEvents();
    QVERIFY(!bars->predicted());
    // Back to the simulated run the following tests expect.
    win_->job()->setDocument(test_job().raw);
    QVERIFY(win_->simulateJob(6));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    m->waitIdle();
    win_->job()->setDocument(saved);
  }
#endif

  void planViewSaysWhyAPlannerHasNoPlan() {
    // A planner that failed (the designer compares them all) used to leave
    // its row blank: its reason must be drawn where the bar would be.
    PlanView v;
    v.resize(500, 120);
    v.setRows({{QStringLiteral("exact"), Plan(), QStringLiteral("refused: too many layers")}});
    QImage img = v.grab().toImage();
    const QRgb base = v.palette().color(QPalette::Base).rgb();
    int ink = 0;
    for (int y = 24; y < img.height(); ++y)
      for (int x = 115; x < img.width(); ++x) ink += img.pixel(x, y) != base;
    QVERIFY2(ink > 50, qPrintable(QStringLiteral("%1 pixels of text in the bar area").arg(ink)));
  }


  void liveRunFillsTheViewsWhileTheGuiStaysResponsive() {
    // One simulated ms per wall ms: a paced, live-like run.
    win_->setSource(new SimulatedRunSource(test_job(), {.iterations = 100000, .speed = 1.0}));
    QVERIFY(wait_until([&] { return win_->run()->eventCount() > 0; }, 5000));
    std::size_t first = win_->run()->eventCount();
    QElapsedTimer t;
    t.start();
    qint64 worst = 0, last = 0;
    while (t.elapsed() < 600) {
      QTest::qWait(5);
      worst = std::max(worst, t.elapsed() - last);
      last = t.elapsed();
    }
    QVERIFY(win_->run()->eventCount() > first);
    if (::pw::test::timing_checks()) QVERIFY2(worst < 200, qPrintable(QStringLiteral("GUI thread stalled %1 ms").arg(worst)));
    QVERIFY(!win_->run()->finished());
    // Freeze: the view stops, data keeps arriving.
    win_->replayBar()->setCursor(win_->run()->endNs() - 1);
    qint64 frozen = win_->timeline()->cursor();
    std::size_t at_freeze = win_->run()->eventCount();
    QTest::qWait(150);
    QVERIFY(win_->run()->eventCount() > at_freeze);
    QCOMPARE(win_->timeline()->cursor(), frozen);
    win_->replayBar()->goLive();
    screenshot(win_, "monitor-live");
    win_->setSource(nullptr);
  }

  void subnetGraphLaysOutWaits() {
    RunModel run;
    RunBatch b;
    b.info = RunInfo{.name = "nas", .stages = 2};
    for (int s = 0; s < 6; ++s) {
      b.subnet_states.push_back({.t_ns = 100 * s, .subnet = s, .stage = s % 2,
                                 .phase = s < 2 ? SubnetPhase::Done : s < 4 ? SubnetPhase::Forward : SubnetPhase::Blocked});
    }
    b.subnet_edges.push_back({.t_ns = 350, .resolved_ns = -1, .waiter = 4, .waited_for = 2, .stage = 0, .layer = 7});
    b.subnet_edges.push_back({.t_ns = 450, .resolved_ns = -1, .waiter = 5, .waited_for = 3, .stage = 1, .layer = 9});
    b.subnet_edges.push_back({.t_ns = 250, .resolved_ns = 300, .waiter = 2, .waited_for = 0, .stage = 0, .layer = 3});
    run.append(b);
    SubnetGraphView v;
    v.resize(700, 400);
    v.setRun(&run);
    QCOMPARE(v.nodeCount(), 6);
    QCOMPARE(v.edgeCount(), 3);
    v.setCursor(260);
    v.relayout();
    QCOMPARE(v.nodeCount(), 3);  // subnets 0..2 had started by then
    QCOMPARE(v.edgeCount(), 1);
    v.setCursor(INT64_MAX);
    v.relayout();
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.fitInView(v.sceneRect(), Qt::KeepAspectRatio);
    screenshot(&v, "subnet-graph");
  }

  void compareOverlaysTwoRuns() {
    win_->setSource(new SimulatedRunSource(test_job(), {.iterations = 6}));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    JobSpec other = test_job();
    other.pipeline.microbatches = 16;
    other.training.batch_size = 32;
    win_->compareWith(new SimulatedRunSource(other, {.iterations = 6}));
    CompareWidget* c = win_->compare();
    QVERIFY(wait_until([&] { return c->second()->finished(); }));
    QTest::qWait(50);
    QVERIFY2(c->summary().contains("B/A"), qPrintable(c->summary()));
    QCOMPARE(c->throughput()->plot()->graphCount(), 2);
    // The time axes are locked together.
    c->timelineA()->plot()->xAxis->setRange(1, 5);
    QCOMPARE(c->timelineB()->plot()->xAxis->range().lower, 1.0);
    QCOMPARE(c->timelineB()->plot()->xAxis->range().upper, 5.0);
    c->timelineA()->zoomToFit();
    screenshot(c, "compare");
    win_->showTab("monitor");
  }

  // pipewright-studio A --compare B: a job file compares as its simulation.
  void comparesWithAFile() {
    QTemporaryDir dir;
    const QString job = dir.filePath("other.json");
    JobSpec other = test_job();
    other.pipeline.stages = 2;
    nlohmann::json raw = other.raw;
    raw["pipeline"]["stages"] = 2;
    QFile f(job);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(raw.dump()));
    f.close();
    QVERIFY(win_->compareWithFile(job));
    CompareWidget* c = win_->compare();
    QVERIFY(wait_until([&] { return c->second()->finished(); }));
    QCOMPARE(c->second()->stageCount(), 2);
    win_->showTab("monitor");
  }

  void exportsPlotsInEveryFormat() {
    QTemporaryDir dir;
    for (const QString& ext : {"png", "pdf", "svg"}) {
      QString f = dir.filePath("timeline." + ext);
      QString err = export_plot(win_->timeline()->plot(), f);
      QVERIFY2(err.isEmpty(), qPrintable(err));
      QVERIFY2(QFileInfo(f).size() > 500, qPrintable(f));
    }
    QVERIFY(!export_plot(win_->timeline()->plot(), dir.filePath("x.bmp")).isEmpty());
    QString f = dir.filePath("plan.svg");
    QVERIFY(export_widget(win_->planView(), f).isEmpty());
    QVERIFY(QFileInfo(f).size() > 200);
  }

  void saveDialogsNeverReplaceARunDatabase() {
    // The dialog confirmed replacing: a text file is replaced, a run
    // database (any SQLite file) never, and a refused save leaves it whole.
    QTemporaryDir dir;
    const QString db = dir.filePath("run.png");
    QByteArray sqlite("SQLite format 3\0rest of a recorded run", 38);
    {
      QFile f(db);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(sqlite);
    }
    QString err = export_plot(win_->timeline()->plot(), db);
    QVERIFY2(err.contains("SQLite"), qPrintable(err));
    QFile back(db);
    QVERIFY(back.open(QIODevice::ReadOnly));
    QCOMPARE(back.readAll(), sqlite);
    JobModel job;
    job.setDocument(nlohmann::json{{"name", "x"}});
    QString why;
    QVERIFY(!job.save(db, &why));
    QVERIFY2(why.contains("SQLite"), qPrintable(why));
    const QString text = dir.filePath("notes.png");
    {
      QFile f(text);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("notes");
    }
    err = export_plot(win_->timeline()->plot(), text);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QVERIFY(QFileInfo(text).size() > 500);
    QCOMPARE(QDir(dir.path()).entryList(QStringList{"*.tmp"}, QDir::Files).size(), 0);
  }

  void darkTheme() {
    // Mean grey level of the window and of its plots under a theme: the dark
    // theme must darken both (a palette the plots ignore would not).
    auto lightness = [&](Theme t, const char* shot) {
      apply_theme(t);
      for (auto* p : win_->findChildren<QCustomPlot*>()) style_plot(p);
      if (shot) screenshot(win_, shot);
      QApplication::processEvents();
      auto mean_grey = [](QWidget* w) {
        for (auto* p : w->findChildren<QCustomPlot*>()) p->replot(QCustomPlot::rpImmediateRefresh);
        QImage img = w->grab().toImage();
        double sum = 0;
        int n = 0;
        for (int y = 0; y < img.height(); y += 5)
          for (int x = 0; x < img.width(); x += 5, ++n) sum += qGray(img.pixel(x, y));
        return n ? sum / n : 0.0;
      };
      double plots = 0;
      int count = 0;
      for (auto* p : win_->findChildren<QCustomPlot*>())
        if (p->isVisible() && p->width() > 50) plots += mean_grey(p), ++count;
      return std::pair{mean_grey(win_), count ? plots / count : 0.0};
    };
    auto [light_window, light_plots] = lightness(Theme::Light, nullptr);
    auto [dark_window, dark_plots] = lightness(Theme::Dark, "monitor-dark");
    lightness(Theme::Light, nullptr);
    QVERIFY2(dark_window < 100 && dark_window < light_window - 60,
             qPrintable(QStringLiteral("window grey %1 dark vs %2 light").arg(dark_window).arg(light_window)));
    QVERIFY2(dark_plots < 100 && dark_plots < light_plots - 60,
             qPrintable(QStringLiteral("plot grey %1 dark vs %2 light").arg(dark_plots).arg(light_plots)));
  }

 private:
  MainWindow* win_ = nullptr;
};

QTEST_MAIN(StudioViewsTest)
#include "test_views.moc"
