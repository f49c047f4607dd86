// The designer's search-space editor on the offscreen platform: the
// shipped supernet jobs load without their search_space changing, a
// structured edit writes exactly that key, a parser error lands at the
// field or table cell it names, and a supernet job gets its prediction.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>

#include <QDoubleSpinBox>

#include "core/nas/search_space_fields.h"
#include "core/spec/job_fields.h"
#include "core/spec/job_spec.h"
#include "gui/models/job_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/search_space_layers_model.h"
#include "gui/models/supernet_comparison_model.h"
#include "gui/widgets/designer_search_space.h"
#include "gui/widgets/designer_widget.h"
#include "gui/widgets/json_key_editor.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/stale_veil.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/timeline_view.h"
#include "gui/models/run_model.h"
#include "tests/gui/view_test_util.h"

using namespace pw;
using namespace pw::gui;
using namespace pw::gui::test;

namespace {
QString job_file(const char* name) { return qEnvironmentVariable("PW_JOBS_DIR", "resources/jobs") + "/" + name; }

nlohmann::json read_json(const QString& file) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return nlohmann::json::parse(f.readAll().toStdString());
}

void pick_kind(SearchSpaceEditor* e, const QString& kind) {
  const int i = e->kindEditor()->findData(kind);
  QVERIFY2(i >= 0, qPrintable(kind));
  e->kindEditor()->setCurrentIndex(i);
  emit e->kindEditor()->activated(i);  // what a user's pick sends
}
}  // namespace

class DesignerSearchSpaceTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    apply_theme(Theme::Light);
    job_ = new JobModel;
    d_ = new DesignerWidget(job_);
    d_->resize(1400, 1000);
    d_->show();
    QVERIFY(QTest::qWaitForWindowExposed(d_));
  }
  void cleanupTestCase() {
    delete d_;
    delete job_;
  }

  void loadingTheShippedSupernetJobsChangesNothing() {
    for (const char* name : {"fmnist-supernet.json", "et-supernet-4gpu.json"}) {
      const auto file = read_json(job_file(name));
      QVERIFY2(file.is_object(), name);
      QString err;
      QVERIFY2(job_->load(job_file(name), &err), qPrintable(err));
      QApplication::processEvents();
      QCOMPARE(QString::fromStdString(job_->document()["search_space"].dump()),
               QString::fromStdString(file["search_space"].dump()));
      QVERIFY(job_->document() == file);
      QVERIFY(!job_->isModified());
      QVERIFY2(job_->isValid(), qPrintable(job_->errorPath() + ": " + job_->errorMessage()));
      QCOMPARE(d_->searchSpace()->kind(), QString::fromStdString(file["search_space"]["builtin"].get<std::string>()));
      // The fields show the file's values.
      auto* window = qobject_cast<QSpinBox*>(d_->editorFor("search_space.window"));
      QVERIFY(window && window->isVisibleTo(d_));
      QCOMPARE(window->value(), file["search_space"]["window"].get<int>());
    }
    QVERIFY(d_->editorFor("search_space.replication")->isVisibleTo(d_));
    QVERIFY(!d_->editorFor("search_space.kernels")->isVisibleTo(d_));
  }

  void aStructuredEditWritesOnlyItsKey() {
    QString err;
    QVERIFY(job_->load(job_file("fmnist-supernet.json"), &err));
    const auto before = job_->document()["search_space"];
    auto* kernels = qobject_cast<QLineEdit*>(d_->editorFor("search_space.kernels"));
    QVERIFY(kernels && kernels->isVisibleTo(d_));
    QCOMPARE(kernels->text(), QStringLiteral("3, 5, 7"));
    kernels->setText("3, 5");
    auto expect = before;
    expect["kernels"] = {3, 5};
    QCOMPARE(QString::fromStdString(job_->document()["search_space"].dump()), QString::fromStdString(expect.dump()));
    QVERIFY(job_->isValid());
    parse_job(job_->document());  // still a job the engine takes
    auto* skip = qobject_cast<QCheckBox*>(d_->editorFor("search_space.skip"));
    QVERIFY(skip);
    skip->setCheckState(Qt::Unchecked);
    QCOMPARE(job_->document()["search_space"]["skip"], false);
    // An error from the core's parser, under its field.
    kernels->setText("3, 4");
    QVERIFY(!job_->isValid());
    QLabel* e = d_->errorLabelFor("search_space.kernels");
    QVERIFY(e && e->isVisible());
    QVERIFY2(e->text().contains("[1]: must be odd"), qPrintable(e->text()));
    QVERIFY(d_->generalError().isEmpty());
    kernels->setText("3, 5, 7");
    QVERIFY(!e->isVisible());
  }

  void aSupernetJobGetsItsPrediction() {
    QString err;
    QVERIFY(job_->load(job_file("fmnist-supernet.json"), &err));
    QVERIFY(wait_until([&] { return !d_->predictionPending() && d_->prediction().supernet.has_value(); }, 60000));
    const auto& s = *d_->prediction().supernet;
    QVERIFY2(s.error.empty(), s.error.c_str());
    QCOMPARE(QString::fromStdString(s.outcomes.front().mode), QStringLiteral("csp"));
    QVERIFY(s.outcomes.front().ok);
    QVERIFY(s.outcomes.front().result.subnets_per_s > 0);
    auto* summary = d_->findChild<QLabel*>("predictionSummary");
    QVERIFY2(summary->text().contains("subnets/s"), qPrintable(summary->text()));
    QCOMPARE(d_->timeline()->run()->info().stages, 2);  // the predicted subnets on the timeline
    // The side-by-side table compares the supernet modes (the planners
    // have nothing to plan), and the caption says so.
    auto* table = d_->findChild<QTableView*>("plannerTable");
    QVERIFY(table);
    QAbstractItemModel* m = table->model();
    QCOMPARE(m->rowCount(), static_cast<int>(s.outcomes.size()));
    QCOMPARE(m->rowCount(), 5);
    auto* tabs = d_->findChild<QTabWidget*>("designerTabs");
    QCOMPARE(tabs->tabText(tabs->indexOf(table)), QStringLiteral("Modes"));
    auto column = [&](const QString& header) {
      for (int c = 0; c < m->columnCount(); ++c)
        if (m->headerData(c, Qt::Horizontal).toString() == header) return c;
      return -1;
    };
    QVERIFY(column("Peak candidates") >= 0 && column("Utilisation") >= 0 && column("Resident") >= 0);
    QStringList modes;
    for (int r = 0; r < m->rowCount(); ++r) {
      const auto& o = s.outcomes[r];
      modes << m->data(m->index(r, 0)).toString().section(' ', 0, 0);
      QVERIFY(o.ok);
      QCOMPARE(m->data(m->index(r, column("Subnets/s")), Qt::UserRole).toDouble(), o.result.subnets_per_s);
      QVERIFY(m->data(m->index(r, column("Peak candidates"))).toString().contains(" of "));
      const QString status = m->data(m->index(r, column("Status"))).toString();
      QCOMPARE(status.contains("not reproducible"), !o.result.reproducible);
    }
    QCOMPARE(modes, (QStringList{"csp", "sequential", "gpipe", "pipedream", "vpipe"}));
    QVERIFY(m->data(m->index(modes.indexOf("pipedream"), column("Status"))).toString().contains("not reproducible"));
    auto* caption = d_->findChild<QLabel*>("partitionCaption");
    QVERIFY(caption);
    QVERIFY2(!caption->text().contains("planner") && caption->text().contains("mode"), qPrintable(caption->text()));
    show_search_space();
    screenshot(d_, "designer-supernet");
  }

  // An invalid job keeps the last valid prediction on screen, greyed and
  // said to be stale, for a supernet job and a planned one alike.
  void anInvalidJobGreysTheLastPrediction() {
    auto greyed = [](QWidget* w) { return !w->isEnabled() && is_veiled(w); };
    auto* summary = d_->findChild<QLabel*>("predictionSummary");
    for (const bool supernet : {true, false}) {
      QString err;
      QVERIFY2(job_->load(job_file(supernet ? "fmnist-supernet.json" : "bert24-4gpu.json"), &err), qPrintable(err));
      QVERIFY(wait_until([&] { return !d_->predictionPending() && d_->prediction().supernet.has_value() == supernet; }, 60000));
      QVERIFY(!greyed(d_->planView()) && d_->memoryPlot()->isEnabled() && d_->timeline()->isEnabled());
      job_->setValue("training.iterations", 0);
      QVERIFY(!job_->isValid());
      QVERIFY(wait_until([&] { return !d_->predictionPending(); }));
      QVERIFY2(summary->text().contains("last valid"), qPrintable(summary->text()));
      QVERIFY(greyed(d_->planView()) && greyed(d_->timeline()) && greyed(d_->memoryPlot()));
      QVERIFY(!d_->findChild<QTableView*>("plannerTable")->isEnabled());
      QVERIFY(summary->isEnabled());  // the note itself stays readable
      if (!supernet) screenshot(d_, "designer-stale");
      job_->setValue("training.iterations", 10);
      QVERIFY(job_->isValid());
      QVERIFY(wait_until([&] { return !d_->predictionPending(); }, 60000));
      QVERIFY2(!greyed(d_->planView()) && d_->timeline()->isEnabled(), qPrintable(summary->text()));
      QVERIFY2(!summary->text().contains("last valid"), qPrintable(summary->text()));
    }
    // A planned job shows the planners again.
    auto* tabs = d_->findChild<QTabWidget*>("designerTabs");
    auto* table = d_->findChild<QTableView*>("plannerTable");
    QCOMPARE(tabs->tabText(tabs->indexOf(table)), QStringLiteral("Planners"));
    QCOMPARE(table->model(), static_cast<QAbstractItemModel*>(d_->comparison()));
    QVERIFY(table->model()->rowCount() > 0);
    QVERIFY(d_->findChild<QLabel*>("partitionCaption")->text().contains("chosen planner"));
  }

  void customLayersTableEditsAndShowsErrorsAtTheirRow() {
    QString err;
    QVERIFY(job_->load(job_file("et-supernet-4gpu.json"), &err));
    SearchSpaceEditor* ss = d_->searchSpace();
    pick_kind(ss, "custom");
    QVERIFY(!job_->document()["search_space"].contains("builtin"));
    QCOMPARE(job_->document()["search_space"]["window"], 32);  // common fields stay
    QVERIFY(!job_->document()["search_space"].contains("replication"));  // the builtin's go
    QVERIFY(ss->layerTable()->isVisibleTo(d_));
    SearchSpaceLayersModel* m = ss->layers();
    QCOMPARE(m->rowCount(), 1);
    m->addLayer();
    m->addCandidate(1);
    m->addLayer();
    QCOMPARE(m->rowCount(), 4);
    // Four choice layers for the job's four stages.
    QVERIFY(m->setData(m->index(m->rowOf(0), SearchSpaceLayersModel::Repeat), 2));
    QVERIFY2(job_->isValid(), qPrintable(job_->errorPath() + ": " + job_->errorMessage()));
    // A structured edit of a candidate: the document follows and still parses.
    QVERIFY(m->setData(m->index(m->rowOf(1, 1), SearchSpaceLayersModel::Op), "light_conv"));
    QVERIFY(m->setData(m->index(m->rowOf(1, 1), SearchSpaceLayersModel::Kernel), 7));
    QVERIFY(m->setData(m->index(m->rowOf(1, 1), SearchSpaceLayersModel::Heads), 4));
    const auto& cand = job_->document()["search_space"]["layers"][1]["candidates"][1];
    QCOMPARE(QString::fromStdString(cand.dump()), QStringLiteral(R"({"heads":4,"kernel":7,"op":"light_conv"})"));
    QVERIFY2(job_->isValid(), qPrintable(job_->errorPath() + ": " + job_->errorMessage()));
    parse_job(job_->document());
    // An error at layer 2's candidate: its row and cell, and under the table.
    QVERIFY(m->setData(m->index(m->rowOf(2, 0), SearchSpaceLayersModel::Kernel), -3));
    QVERIFY(!job_->isValid());
    QCOMPARE(job_->errorPath(), QStringLiteral("search_space.layers[2].candidates[0].kernel"));
    const int bad = m->rowOf(2, 0);
    QVERIFY(!m->errorAt(bad, SearchSpaceLayersModel::Kernel).isEmpty());
    for (int r = 0; r < m->rowCount(); ++r)
      if (r != bad) QVERIFY(m->errorAt(r, SearchSpaceLayersModel::Kernel).isEmpty());
    QLabel* under = d_->errorLabelFor("search_space.layers");
    QVERIFY(under->isVisible());
    QVERIFY2(under->text().contains("layers[2].candidates[0].kernel"), qPrintable(under->text()));
    ss->layerTable()->scrollTo(m->index(bad, 0));
    show_search_space();
    QVERIFY(wait_until([&] { return !d_->predictionPending(); }));
    screenshot(d_, "designer-search-space-error");
    QVERIFY(m->setData(m->index(bad, SearchSpaceLayersModel::Kernel), 3));
    QVERIFY(job_->isValid());
    QVERIFY(m->errorAt(bad, SearchSpaceLayersModel::Kernel).isEmpty());
  }

  void uncoveredFieldsSurviveAndShowAsJson() {
    // A custom space with what the form has no field for: a uniform
    // candidate's costs and the evolutionary search's settings.
    auto doc = read_json(job_file("et-supernet-4gpu.json"));
    doc["search_space"] = nlohmann::json::parse(R"({"layers": [{"name": "a", "repeat": 4, "candidates": [
        {"op": "uniform", "fwd_ms": 2, "bwd_ms": 4}, {"op": "glu"}]}], "search": {"population": 8}, "window": 4})");
    job_->setDocument(doc);
    QVERIFY2(job_->isValid(), qPrintable(job_->errorPath() + ": " + job_->errorMessage()));
    QVERIFY(job_->document() == doc);
    SearchSpaceLayersModel* m = d_->searchSpace()->layers();
    QCOMPARE(m->data(m->index(0, SearchSpaceLayersModel::Other)).toString(), QStringLiteral("bwd_ms: 4, fwd_ms: 2"));
    QVERIFY(m->setData(m->index(1, SearchSpaceLayersModel::Op), "attention"));
    auto expect = doc["search_space"];
    expect["layers"][0]["candidates"][1]["op"] = "attention";
    QCOMPARE(QString::fromStdString(job_->document()["search_space"].dump()), QString::fromStdString(expect.dump()));
    // Edit as JSON: the whole object as text; typing there writes it.
    d_->searchSpace()->jsonToggle()->setChecked(true);
    JsonKeyEditor* json = d_->searchSpace()->jsonEditor();
    QVERIFY(json->isVisibleTo(d_));
    QVERIFY(!d_->searchSpace()->layerTable()->isVisibleTo(d_));
    QVERIFY(json->toPlainText().contains("\"population\": 8"));
    auto edited = expect;
    edited["search"]["population"] = 12;
    json->setPlainText(QString::fromStdString(edited.dump(2)));
    QCOMPARE(job_->document()["search_space"]["search"]["population"], 12);
    d_->searchSpace()->jsonToggle()->setChecked(false);
    QVERIFY(d_->searchSpace()->layerTable()->isVisibleTo(d_));
    // None: not a supernet job; picking the kind back restores the space.
    // The job's schedule is csp, which schedules a supernet's subnets: without
    // a search space the form names pipeline.schedule, as every command does.
    pick_kind(d_->searchSpace(), QString());
    QVERIFY(!job_->document().contains("search_space"));
    QVERIFY(!job_->isValid());
    QCOMPARE(job_->errorPath(), QStringLiteral("pipeline.schedule"));
    pick_kind(d_->searchSpace(), "custom");
    QVERIFY2(job_->isValid(), qPrintable(job_->errorPath() + ": " + job_->errorMessage()));
    QCOMPARE(QString::fromStdString(job_->document()["search_space"].dump()), QString::fromStdString(edited.dump()));
  }

  // Issue 42: the editors' ranges are the bounds table's rows (core's
  // search_space_fields, the parser's): one below the minimum reads
  // "default", the maximum is the row's. Every editor of a ranged field is
  // checked, so a hard-coded range that drifts fails here.
  void editorRangesAreTheBoundsTable() {
    int checked = 0;
    for (const auto& row : nas::search_space_fields()) {
      if (!row.ranged) continue;
      // Candidate costs are edited at search_space level for the uniform builtin.
      if (row.scope == nas::SpaceScope::Layer) continue;
      const QString name = QStringLiteral("search_space.") + QLatin1String(row.key.data(), static_cast<int>(row.key.size()));
      QWidget* editor = d_->searchSpace()->findChild<QWidget*>(name);
      // A table cell (kernel, heads), or a list typed as text (kernels,
      // widths: each entry's range is the parser's message).
      if (!editor || qobject_cast<QLineEdit*>(editor)) continue;
      if (auto* s = qobject_cast<QSpinBox*>(editor)) {
        QVERIFY2(row.integer, qPrintable(name));
        QCOMPARE(s->maximum(), static_cast<int>(std::min<double>(row.max, std::numeric_limits<int>::max())));
        QCOMPARE(s->minimum(), static_cast<int>(row.min) - 1);
        QCOMPARE(s->specialValueText(), tr("default"));
      } else if (auto* d = qobject_cast<QDoubleSpinBox*>(editor)) {
        QCOMPARE(d->maximum(), row.max);
        QVERIFY2(d->minimum() < row.min && d->minimum() >= row.min - 0.011, qPrintable(name));
        QCOMPARE(d->specialValueText(), tr("default"));
      } else {
        QFAIL(qPrintable(name + ": a ranged field edited without a range"));
      }
      ++checked;
    }
    // window, replication, choice_layers, choices, device_budget_gb and the uniform costs.
    QVERIFY2(checked >= 9, qPrintable(QString::number(checked)));
    QCOMPARE(nas::search_space_field("window").max, 4096.0);  // the parser's, not 2^20

    // The seed: any 64-bit unsigned value, kept exactly (a spin box stopped at 2^30).
    auto* seed = d_->findChild<QLineEdit*>(QStringLiteral("training.seed"));
    QVERIFY(seed);
    const nlohmann::json saved = job_->document();
    seed->setText(QStringLiteral("18446744073709551615"));
    QVERIFY(wait_until([&] { return job_->document()["training"]["seed"] == nlohmann::json(18446744073709551615ull); }));
    QVERIFY2(job_->isValid(), qPrintable(job_->errorMessage()));
    job_->setDocument(saved);
  }

 private:
  void show_search_space() {
    auto* scroll = d_->findChild<QScrollArea*>();
    QVERIFY(scroll);
    scroll->ensureWidgetVisible(d_->searchSpace(), 0, 0);
    QApplication::processEvents();
    // The form is no wider than its column: nothing to scroll sideways.
    if (scroll->horizontalScrollBar()->isVisible())
      for (auto* w : d_->searchSpace()->findChildren<QWidget*>())
        if (w->isVisible() && w->minimumSizeHint().width() > 250)
          qWarning() << w->metaObject()->className() << w->objectName() << w->minimumSizeHint() << w->width();
    QVERIFY(!scroll->horizontalScrollBar()->isVisible());
  }

  JobModel* job_ = nullptr;
  DesignerWidget* d_ = nullptr;
};

QTEST_MAIN(DesignerSearchSpaceTest)
#include "test_designer_search_space.moc"
