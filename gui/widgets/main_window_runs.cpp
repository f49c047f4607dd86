// The monitored run: replacing its source (simulate, open, attach, launch all
// end here), the replay cursor and freeze, Compare's second run, and the
// status bar that says what the run is doing.
#include "gui/widgets/main_window.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include "core/job/job_plan.h"
#include "gui/models/engine_process.h"
#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/models/migrations_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"
#include "gui/widgets/compare_widget.h"
#include "gui/widgets/memory_view.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/replay_bar.h"
#include "gui/widgets/subnet_graph_view.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_view.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_run_source.h"
#endif

namespace pw::gui {

void MainWindow::setSource(RunSource* source) {
  feeder_->setSource(nullptr);
  source_.reset(source);
  freeze_->setChecked(false);
  replay_->goLive();
  run_->clear();
  source_error_.clear();
  timeline_->highlightIdle({}, QColor());
  // Sources that know the run's job (simulated, recorded) set it after this.
  explain_model_->clearJob(source ? tr("this run's source does not give its job (live runs)") : tr("no run"));
  explain_model_->clearPrediction(source ? tr("this run's source does not give its profile and plans (live runs)")
                                         : tr("no run"));
  timeline_->setPredicted(nullptr);
  if (!source) return;
  source->setParent(nullptr);
  connect(source, &RunSource::failed, this, [this](const QString& why) {
    source_error_ = why;
    updateStatus();
    log(tr("run source failed: %1").arg(why));
    statusBar()->showMessage(tr("Failed: %1").arg(why), 10000);
  });
  connect(source, &RunSource::status, this, [this](const QString& s) { log(s); });
  connect(source, &RunSource::finished, this, [this] { log(tr("run source finished")); });
  feeder_->setSource(source);
  source->start();
  showTab(QStringLiteral("monitor"));
  log(tr("opened %1").arg(source->description()));
  updateStatus();
}

bool MainWindow::simulateJob(int iterations, double speed) {
  if (!job_->isValid()) {
    statusBar()->showMessage(tr("The job is not valid: %1: %2").arg(job_->errorPath(), job_->errorMessage()), 8000);
    showTab(QStringLiteral("designer"));
    return false;
  }
  setSource(new SimulatedRunSource(*job_->spec(), {.iterations = iterations, .speed = speed}));
  explain_model_->setJobLoader([doc = job_->spec()->raw] { return doc; }, tr("the job is empty"));
  // The simulated run is its own prediction (nothing diverges): the same
  // job, profile and plan, simulated again.
  explain_model_->setPredictionLoader([spec = *job_->spec()] {
    PreparedJob p = prepare_job(spec);
    auto in = std::make_shared<PredictionInputs>();
    in->job = spec;
    in->profile = std::move(p.profile);
    in->plans.push_back({0, 1, std::move(p.plan)});
    return PredictionSource{std::move(in), {}};
  });
  return true;
}

bool MainWindow::compareWith(RunSource* source) {
  compare_->loadSecond(source);
  showTab(QStringLiteral("compare"));
  return true;
}

void MainWindow::onCompare() {
  QString file = QFileDialog::getOpenFileName(this, tr("Compare With"), QSettings().value("files/lastDir").toString(),
                                              tr("Runs and jobs (*.db *.sqlite *.pwrun *.json)"));
  if (!file.isEmpty()) compareWithFile(file);
}

bool MainWindow::compareWithFile(const QString& file) {
  if (!QFileInfo::exists(file)) {
    QMessageBox::warning(this, tr("Compare"), tr("\"%1\" does not exist.").arg(file));
    return false;
  }
  if (QFileInfo(file).suffix().toLower() == "json") {
    // A job file: compare against its simulation.
    JobModel other;
    QString err;
    if (!other.load(file, &err) || !other.isValid()) {
      QMessageBox::warning(this, tr("Compare"), err.isEmpty() ? other.errorPath() + ": " + other.errorMessage() : err);
      return false;
    }
    return compareWith(new SimulatedRunSource(*other.spec(), {.iterations = 20}));
  }
#ifdef PW_STUDIO_HAVE_DB
  return compareWith(new DbRunSource(file.toStdString()));
#else
  QMessageBox::warning(this, tr("Compare"), tr("This studio was built without the run database (pw_db)."));
  return false;
#endif
}

void MainWindow::onFreeze(bool on) {
  if (on) {
    replay_->setCursor(run_->endNs() - 1);  // the views stop here; data keeps arriving
    statusBar()->showMessage(tr("View frozen: data keeps arriving (Ctrl+F to follow again)"), 5000);
  } else {
    replay_->goLive();
  }
}

void MainWindow::setCursor(qint64 t) {
  timeline_->setCursor(t);
  memory_->setCursor(t);
  throughput_->setCursor(t);
  plan_->setCursor(t);
  migrations_->setCursor(t);
  graph_->setCursor(t);
  if (t == INT64_MAX && freeze_->isChecked()) {
    QSignalBlocker b(freeze_);
    freeze_->setChecked(false);
  }
  updateStatus();
}

QString MainWindow::statusText() const {
  return status_source_->text() + " | " + status_events_->text() + " | " + status_cursor_->text();
}

void MainWindow::updateStatus() {
  bool live_ctl = source_ && source_->canControl();
  for (auto* a : {pause_, resume_, stop_, rebalance_}) a->setEnabled(live_ctl || (a == stop_ && engine_ && engine_->isRunning()));
  QString src = source_ ? source_->description() : tr("No run: File > Open, drop a run file here, or Run > Simulate (F5)");
  if (!source_error_.isEmpty() && run_->status() == RunStatus::Running) src += tr(" — %1").arg(source_error_);
  if (!source_ && engine_ && engine_->isRunning()) src = tr("Engine starting (pid %1), waiting for its telemetry").arg(engine_->pid());
  if (run_->status() != RunStatus::Running) {
    src += tr(" — run %1").arg(QLatin1String(to_string(run_->status())));
    if (!run_->statusReason().empty()) src += QStringLiteral(": ") + QString::fromStdString(run_->statusReason());
  } else if (run_->paused()) {
    src += tr(" — paused");
  } else if (source_ && source_->isRunning() && !run_->finished()) {
    src += tr(" — receiving");
  } else if (run_->finished()) {
    src += tr(" — complete");
  }
  status_source_->setText(src);
  status_events_->setText(tr("%L1 events, %2 stages%3")
                              .arg(run_->eventCount())
                              .arg(run_->stageCount())
                              .arg(feeder_->eventsPerSecond() > 0 ? tr(", %L1 ev/s").arg(static_cast<qint64>(feeder_->eventsPerSecond())) : QString()));
  // "live" only while data still arrives: a finished recording's cursor
  // at its end is the end, not a live run.
  const qint64 c = replay_->cursor();
  const bool live = source_ && source_->isRunning() && !run_->finished() && run_->status() == RunStatus::Running;
  if (c != INT64_MAX)
    status_cursor_->setText(tr("t = %1").arg(format_duration_ns(static_cast<double>(c - run_->beginNs()))));
  else if (live)
    status_cursor_->setText(tr("live"));
  else if (run_->isEmpty())
    status_cursor_->clear();
  else
    status_cursor_->setText(tr("end, t = %1").arg(format_duration_ns(static_cast<double>(run_->endNs() - run_->beginNs()))));
}

}  // namespace pw::gui
