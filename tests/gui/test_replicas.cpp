// The studio on a recorded run with data-parallel replicas (issue 39): the
// all-reduce on its own collective row per stage, replica 0's pipeline by
// default with a selector listing the recorded replicas, another replica
// shown when chosen, and the Explain dock's gradient-sync cause equal to
// the simulator's own figure.
#include <QTableWidget>
#include <algorithm>
#include <limits>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "core/analysis/idle_attribution.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "db/run_writer.h"
#include "gui/models/explain_model.h"
#include "gui/models/range_stats.h"
#include "gui/models/run_model.h"
#include "gui/widgets/explain_dock.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/replica_selector.h"
#include "gui/widgets/timeline_plottable.h"
#include "gui/widgets/timeline_view.h"
#include "studio_window_fixture.h"
#include "view_test_util.h"

using namespace pw;
using namespace pw::gui;
using pw::gui::test::wait_until;

namespace {

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

// Two stages x three replicas over two nodes joined by a slow link, so the
// all-reduce outlasts the backward and the steps wait for it.
nlohmann::json replicated_job() {
  return {{"name", "replicated"},
          {"model", {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", 8}, {"hidden", 1024}, {"heads", 16}, {"seq_len", 256}, {"vocab", 32000}}},
          {"training", {{"optimizer", "adam"}, {"batch_size", 48}, {"microbatch_size", 4}, {"iterations", 10}}},
          {"cluster", {{"devices", 6}, {"device", "v100-32g"}, {"gpus_per_node", 4}, {"node_link_gbps", 10}}},
          {"pipeline", {{"stages", 2}, {"schedule", "1f1b"}, {"planner", "uniform"}}},
          {"parallel", {{"data", 3}}}};
}

// Replica r's events: replica 0's, later by r x kShift (as the engine's
// replicas would record them, each on its own clock offset).
constexpr std::int64_t kShift = 1000;

}  // namespace

class StudioReplicasTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { win_ = test::open_studio_window("pw_test_gui_replicas"); }
  void cleanupTestCase() { delete win_; }

  void recordedReplicasShowOnePipelineWithASelector() {
    QTemporaryDir dir;
    const QString path = dir.filePath("replicas.pwrun.sqlite");
    const nlohmann::json doc = replicated_job();
    PreparedJob job = prepare_job(parse_job(doc));
    Collect c;
    SimResult sim = simulate(job.sim_input(), &c);
    QVERIFY(sim.feasible);
    QCOMPARE(sim.replicas, 3);
    std::vector<std::size_t> allreduce_per_stage(2, 0);
    std::int64_t allreduce_ns = 0, first_compute = std::numeric_limits<std::int64_t>::max();
    for (const auto& e : c.events) {
      QVERIFY(e.replica == 0);  // the simulator records replica 0
      if (e.kind == EventKind::AllReduce) ++allreduce_per_stage[e.stage], allreduce_ns += e.end_ns - e.start_ns;
      if (e.stage == 0 && row_of(e.kind) == TrackRow::Compute) first_compute = std::min(first_compute, e.start_ns);
    }
    QVERIFY(allreduce_per_stage[0] > 0 && allreduce_per_stage[1] > 0);
    {
      db::RunWriter w(path.toStdString(), {.name = "replicated", .stages = 2});
      w.job(doc);
      w.plan(1, 0, "initial", to_json(job.plan));
      for (int r = 0; r < 3; ++r)
        for (Event e : c.events) {
          e.replica = static_cast<std::int16_t>(r);
          e.start_ns += r * kShift, e.end_ns += r * kShift;
          w.on_event(e);
        }
      w.finish(RunStatus::Finished);
    }

    QVERIFY(win_->openFile(path));
    QVERIFY(wait_until([&] { return win_->run()->finished(); }));
    RunModel* run = win_->run();
    // Replica 0's pipeline only: the others share its stage numbers.
    QCOMPARE(run->eventCount(), c.events.size());
    QCOMPARE(run->info().recorded_replicas, 3);
    QCOMPARE(run->info().replica, 0);
    QCOMPARE(run->track(0, TrackRow::Compute).min_start(), first_compute);

    // The collective row: every all-reduce of the stage, and nothing else.
    for (int s = 0; s < 2; ++s) {
      const EventTrack& t = run->track(s, TrackRow::Collective);
      QCOMPARE(t.size(), allreduce_per_stage[static_cast<std::size_t>(s)]);
      for (std::size_t i = 0; i < t.size(); ++i) QVERIFY(t.kind(i) == EventKind::AllReduce);
      for (TrackRow other : {TrackRow::Compute, TrackRow::Copy, TrackRow::Network}) {
        const EventTrack& o = run->track(s, other);
        for (std::size_t i = 0; i < o.size(); ++i) QVERIFY(o.kind(i) != EventKind::AllReduce);
      }
    }
    // Its own band inside the stage's lane, below the links.
    TimelinePlottable* bars = win_->timeline()->bars();
    double nt, nb, ct, cb;
    bars->rowExtent(1, TrackRow::Network, nt, nb);
    bars->rowExtent(1, TrackRow::Collective, ct, cb);
    QVERIFY(nb < ct && ct < cb && cb < 1.5);
    // Range statistics count it (not as busy time).
    const RangeStats rs = range_stats(*run, run->beginNs(), run->endNs() + 1);
    QCOMPARE(rs.kind_ns[static_cast<int>(EventKind::AllReduce)], allreduce_ns);

    // The selector lists the recorded replicas, replica 0 current.
    QVERIFY(win_->replicaSelectorShown());
    ReplicaSelector* sel = win_->replicaSelector();
    QCOMPARE(sel->count(), 3);
    for (int r = 0; r < 3; ++r) QCOMPARE(sel->itemData(r).toInt(), r);
    QCOMPARE(sel->currentIndex(), 0);
    QVERIFY(sel->isEnabled());

    // The Explain dock: the steps' wait for the all-reduce is a cause of
    // its own, equal per stage to what the simulator computed for it.
    ExplainModel* m = win_->explainModel();
    m->waitIdle();
    QApplication::processEvents();
    QVERIFY(wait_until([&] {
      m->waitIdle();
      QApplication::processEvents();
      return m->result().iterations == 1 && m->result().stages.size() == 2;
    }));
    const int gs = static_cast<int>(IdleCause::GradientSync);
    const ExplainResult& er = m->result();
    double exposed = 0;
    for (int s = 0; s < 2; ++s) {
      const double want_ns = sim.stages[static_cast<std::size_t>(s)].sync_exposed_ms * 1e6;
      QVERIFY2(std::abs(static_cast<double>(er.stages[static_cast<std::size_t>(s)].cause_ns[gs]) - want_ns) <= 1.0,
               qPrintable(QStringLiteral("stage %1: %2 ns attributed, %3 ns simulated")
                              .arg(s)
                              .arg(er.stages[static_cast<std::size_t>(s)].cause_ns[gs])
                              .arg(want_ns)));
      exposed += want_ns;
    }
    QVERIFY2(exposed > 0, "the job should make the steps wait for the all-reduce");
    ExplainDock* dock = win_->explainDock();
    dock->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(dock->bars(gs)->name(), QStringLiteral("gradient_sync"));
    QCOMPARE(dock->bars(gs)->dataCount(), 2);
    for (int s = 0; s < 2; ++s)
      QCOMPARE((dock->bars(gs)->data()->constBegin() + s)->value, er.stages[static_cast<std::size_t>(s)].cause_ns[gs] / 1e6);
    test::screenshot(win_, "monitor-replicas");

    // Choosing replica 2 shows its pipeline (its events, kShift x 2 later).
    emit sel->activated(2);
    QVERIFY(wait_until([&] { return run->finished() && run->info().replica == 2; }));
    QCOMPARE(run->eventCount(), c.events.size());
    QCOMPARE(run->track(0, TrackRow::Compute).min_start(), first_compute + 2 * kShift);
    QCOMPARE(sel->currentIndex(), 2);
    QCOMPARE(sel->count(), 3);
  }

 private:
  MainWindow* win_ = nullptr;
};

QTEST_MAIN(StudioReplicasTest)
#include "test_replicas.moc"
