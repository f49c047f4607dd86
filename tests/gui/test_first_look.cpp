// The studio's first look at a recorded run (issue 42), checked from widget
// geometry and pixels, not by eye: the timeline's legend lists every kind
// the run holds (from core's classification), the throughput view says the
// simulated iteration's samples/s, stage labels do not overlap at 8 and at
// 64 stages (Explain's bars, the timeline's lanes, the plan strip), and the
// status bar says "live" only while a run is.
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "core/events/event_kinds.h"
#include "gui/models/explain_model.h"
#include "gui/models/run_model.h"
#include "gui/widgets/explain_dock.h"
#include "gui/widgets/kind_legend.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/stage_labels.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_view.h"
#include "recorded_run.h"
#include "studio_window_fixture.h"
#include "view_test_util.h"

using namespace pw;
using namespace pw::gui;
using pw::gui::test::wait_until;

namespace {

nlohmann::json shipped_job(const char* name) {
  QFile f(qEnvironmentVariable("PW_JOBS_DIR") + "/" + name);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return nlohmann::json::parse(f.readAll().toStdString());
}

nlohmann::json wide_job() {
  return nlohmann::json::parse(R"({"name": "wide64", "model": {"kind": "uniform", "layers": 128, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 1, "param_mb": 1}, "training": {"batch_size": 64, "microbatch_size": 1},
      "cluster": {"devices": 64, "device": "v100-32g"}, "pipeline": {"stages": 64, "schedule": "1f1b", "planner": "uniform"}})");
}

// Neighbouring labels along an axis keep clear of each other and of the
// axis' ends.
void check_axis_labels(const StageLabels* labels, const QString& what, int stages) {
  const auto placed = labels->placed();
  QVERIFY2(!placed.empty(), qPrintable(what + ": no labels"));
  QCOMPARE(labels->count(), stages);
  QCOMPARE(placed.front().stage, 0);
  for (std::size_t i = 1; i < placed.size(); ++i) {
    const auto& a = placed[i - 1];
    const auto& b = placed[i];
    const double gap = std::abs(b.center_px - a.center_px) - (a.extent_px + b.extent_px) / 2;
    QVERIFY2(gap >= 0, qPrintable(QStringLiteral("%1: \"%2\" and \"%3\" overlap by %4 px")
                                      .arg(what, a.text, b.text)
                                      .arg(-gap)));
  }
  // Every stage is reachable by counting: a step that divides the axis evenly.
  QVERIFY(labels->step() >= 1);
  for (const auto& p : placed) QCOMPARE(p.stage % labels->step(), 0);
}

void check_plan_labels(PlanView* plan, const QString& what) {
  QVERIFY2(!plan->rows().empty(), qPrintable(what + ": no plan"));
  const auto labels = plan->stageLabels(0);
  QVERIFY2(!labels.empty(), qPrintable(what + ": no stage labels"));
  for (std::size_t i = 0; i < labels.size(); ++i)
    for (std::size_t j = i + 1; j < labels.size(); ++j)
      QVERIFY2(!labels[i].rect.intersects(labels[j].rect),
               qPrintable(QStringLiteral("%1: \"%2\" and \"%3\" overlap").arg(what, labels[i].text, labels[j].text)));
  // Each centred on its own stage, on the bar; at 64 stages still every few numbered.
  const Plan& p = plan->rows().front().plan;
  const double w = std::max(50.0, plan->width() - 118.0) / p.layer_count();  // barRect: kLabelWidth 110, 8 right
  for (const auto& l : labels) {
    const auto& st = p.stages[static_cast<std::size_t>(l.stage)];
    const double centre = 110 + (st.first_layer + st.size() / 2.0) * w;
    QVERIFY2(std::abs(l.rect.center().x() - centre) < 1,
             qPrintable(QStringLiteral("%1: \"%2\" is not on its stage").arg(what, l.text)));
    QVERIFY2(l.rect.left() >= 110 - 0.5 && l.rect.right() <= 110 + w * p.layer_count() + 0.5,
             qPrintable(QStringLiteral("%1: \"%2\" leaves the bar").arg(what, l.text)));
  }
  QVERIFY2(labels.size() >= std::min<std::size_t>(p.stages.size(), 8),
           qPrintable(QStringLiteral("%1: only %2 of %3 stages labelled").arg(what).arg(labels.size()).arg(p.stages.size())));
}

}  // namespace

class FirstLookTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { win_ = test::open_studio_window("pw_test_gui_first_look"); }
  void cleanupTestCase() { delete win_; }

  void recordedZeroBubbleRun() {
    const nlohmann::json doc = shipped_job("gpt32-8gpu-auto.json");
    QVERIFY2(doc.is_object(), "PW_JOBS_DIR/gpt32-8gpu-auto.json");
    const QString path = dir_.filePath("gpt32.pwrun.sqlite");
    const SimResult sim = test::record_simulated(path.toStdString(), doc);
    QVERIFY(win_->openFile(path));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    RunModel* run = win_->run();
    QApplication::processEvents();

    // Legend: exactly the kinds the run holds (read from its tracks here),
    // each with its colour's swatch, grouped by core's lanes.
    std::uint32_t present = 0;
    for (int s = 0; s < run->stageCount(); ++s)
      for (int r = 0; r < kTrackRowCount; ++r) {
        const EventTrack& t = run->track(s, static_cast<TrackRow>(r));
        for (std::size_t i = 0; i < t.size(); ++i) present |= 1u << static_cast<int>(t.kind(i));
      }
    KindLegend* legend = win_->timeline()->legend();
    QVERIFY(legend->isVisible());
    std::uint32_t listed = 0;
    for (EventKind k : legend->kinds()) listed |= 1u << static_cast<int>(k);
    QCOMPARE(listed, present & ~(1u << static_cast<int>(EventKind::Idle)));
    QVERIFY2(legend->kinds().size() >= 5, "a zero-bubble run with a memory policy: F, B, W, recompute, swaps, sends");
    for (EventKind k : legend->kinds()) {
      auto* item = legend->findChild<QWidget*>(QStringLiteral("legend.") + QLatin1String(to_string(k)));
      QVERIFY2(item && item->isVisible(), to_string(k));
      auto* sw = item->findChild<QLabel*>(QStringLiteral("swatch"));
      QVERIFY(sw);
      const QImage img = sw->pixmap().toImage();
      QCOMPARE(QColor(img.pixel(img.width() / 2, img.height() / 2)), kind_color(k));
    }
    // Every kind of core's but Idle can be listed: a new kind is, unchanged.
    QCOMPARE(static_cast<int>(KindLegend::drawable_kinds().size()), kEventKindCount - 1);
    for (int i = 1; i < static_cast<int>(KindLegend::drawable_kinds().size()); ++i)
      QVERIFY(static_cast<int>(lane_of(KindLegend::drawable_kinds()[i - 1])) <=
              static_cast<int>(lane_of(KindLegend::drawable_kinds()[i])));

    // Throughput: the iteration's samples/s as a level over the iteration,
    // and said in words; the line is drawn (its colour in the plot's pixels).
    win_->showTab(QStringLiteral("monitor"));
    ThroughputView* tv = win_->throughputView();
    QCustomPlot* tp = tv->plot();
    QCOMPARE(tp->graphCount(), 1);
    QCPGraph* g = tp->graph(0);
    QVERIFY2(g->dataCount() >= 2, "a finished simulated run has a throughput line");
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
      QVERIFY(std::abs(it->value - sim.throughput_samples_per_s) < 1e-6 * sim.throughput_samples_per_s);
    QVERIFY(std::abs((g->data()->constEnd() - 1)->key - (g->data()->constBegin())->key - sim.iteration_time_ms) < 1);
    QVERIFY2(tv->figure()->text().contains(QString::number(sim.throughput_samples_per_s, 'f', 1) + " samples/s"),
             qPrintable(tv->figure()->text()));
    tv->show();
    tv->resize(std::max(tv->width(), 400), std::max(tv->height(), 200));
    tp->replot(QCustomPlot::rpImmediateRefresh);
    const QImage px = tp->toPixmap(tp->width(), tp->height()).toImage();
    const int y = qRound(tp->yAxis->coordToPixel(sim.throughput_samples_per_s));
    int line = 0;
    for (int x = tp->axisRect()->left() + 2; x < tp->axisRect()->right() - 2; ++x)
      for (int dy = -2; dy <= 2; ++dy) {
        const QColor c(px.pixel(x, std::clamp(y + dy, 0, px.height() - 1)));
        if (std::abs(c.red() - 76) < 12 && std::abs(c.green() - 155) < 12 && std::abs(c.blue() - 232) < 12) {
          ++line;
          break;
        }
      }
    QVERIFY2(line > tp->axisRect()->width() / 2, qPrintable(QStringLiteral("line drawn over %1 px").arg(line)));

    // A finished recording is not live.
    QVERIFY(wait_until([&] { return !win_->statusText().contains("receiving"); }));
    QTest::qWait(600);  // the status timer
    QVERIFY2(!win_->statusText().contains("live"), qPrintable(win_->statusText()));
    QVERIFY2(win_->statusText().contains("end, t = "), qPrintable(win_->statusText()));

    checkLabels(doc["pipeline"]["stages"].get<int>(), "8 stages");
    test::screenshot(win_, "first-look-gpt32-8gpu-auto");
  }

  void sixtyFourStages() {
    const QString path = dir_.filePath("wide.pwrun.sqlite");
    test::record_simulated(path.toStdString(), wide_job());
    QVERIFY(win_->openFile(path));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    QApplication::processEvents();
    checkLabels(64, "64 stages");
    QTest::qWait(600);  // the status timer
    QVERIFY2(!win_->statusText().contains("live"), qPrintable(win_->statusText()));
    test::screenshot(win_, "first-look-64-stages");
  }

 private:
  void checkLabels(int stages, const QString& what) {
    ExplainModel* m = win_->explainModel();
    QVERIFY(wait_until([&] {
      m->waitIdle();
      QApplication::processEvents();
      return static_cast<int>(m->result().stages.size()) == stages;
    }, 30000));
    ExplainDock* dock = win_->explainDock();
    win_->findChild<QDockWidget*>(QStringLiteral("dock.explain"))->raise();  // shown, at its real size
    QApplication::processEvents();
    for (int i = 0; i < 2; ++i) dock->plot()->replot(QCustomPlot::rpImmediateRefresh);
    check_axis_labels(dock->stageLabels(), "explain x, " + what, stages);
    TimelineView* tl = win_->timeline();
    for (int i = 0; i < 2; ++i) tl->plot()->replot(QCustomPlot::rpImmediateRefresh);
    check_axis_labels(tl->stageLabels(), "timeline y, " + what, stages);
    PlanView* plan = win_->planView();
    plan->show();
    QApplication::processEvents();
    check_plan_labels(plan, "plan strip, " + what);
    test::screenshot(dock, QStringLiteral("first-look-explain-%1-stages").arg(stages));
  }

  QTemporaryDir dir_;
  MainWindow* win_ = nullptr;
};

QTEST_MAIN(FirstLookTest)
#include "test_first_look.moc"
