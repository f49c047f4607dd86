// Live runs: launching `pipewright run` as a child and following its
// telemetry, attaching to a running coordinator, and pause / resume / stop.
#include "gui/widgets/main_window.h"

#include <QMessageBox>
#include <QPointer>
#include <QStatusBar>
#include <QTimer>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/spec/bounded_json.h"
#include "gui/models/engine_process.h"
#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/widgets/run_launcher.h"

namespace pw::gui {
namespace {
// How long the launched engine's final telemetry may trail its exit.
constexpr int kEngineSettleMs = 500;
// How long a launched engine asked to stop may take before it is terminated.
constexpr int kGracefulStopMs = 3000;
}  // namespace

void MainWindow::onLaunch() {
  if (!job_->isValid()) {
    QMessageBox::warning(this, tr("Launch"), tr("The job is not valid: %1: %2").arg(job_->errorPath(), job_->errorMessage()));
    return;
  }
  LaunchRequest req;
  if (!LaunchDialog::ask(this, *job_, req)) return;
  if (!launch(req)) QMessageBox::warning(this, tr("Launch"), tr("An engine launched from here is still running; stop it first."));
}

bool MainWindow::launch(const LaunchRequest& req) {
  if (engine_ && engine_->isRunning()) return false;
  if (!engine_) {
    engine_ = new EngineProcess(this);
    connect(engine_, &EngineProcess::output, this, &MainWindow::log);
    connect(engine_, &EngineProcess::telemetry, this, [this](const QString& endpoint) {
      RunSource* live = make_attach_source(endpoint);
      if (!live) return;
      log(tr("following the engine's telemetry at %1").arg(endpoint));
      setSource(live);
      launched_source_ = live;
      if (!launched_job_file_.isEmpty())
        explain_model_->setJobLoader(
            [file = launched_job_file_.toStdString()] {
              return parse_bounded_json(read_bounded_file(file, kMaxJobFileBytes, "job file"));
            },
            tr("the launched job's file is empty"));
    });
    connect(engine_, &EngineProcess::exited, this, &MainWindow::onEngineExited);
  }
  setSource(nullptr);
  launched_source_ = nullptr;
  launched_job_file_ = req.job_file;
  log(tr("launching %1 %2").arg(req.program, req.arguments.join(' ')));
  engine_->start(req.program, req.arguments);
  showTab(QStringLiteral("monitor"));
  statusBar()->showMessage(tr("Starting the engine…"), 5000);
  updateStatus();
  return true;
}

void MainWindow::onEngineExited(int code, bool crashed, const QString& why) {
  log(why);
  statusBar()->showMessage(why, 10000);
  // The engine's last telemetry (its final status) may still be in flight:
  // give it a moment, then settle the run from the exit if it said nothing.
  QTimer::singleShot(kEngineSettleMs, this, [this, code, crashed, why] {
    RunSource* launched = launched_source_.data();
    bool ours = launched && launched == source_.get();
    if (ours) {
      feeder_->drain();
      launched->stop();
      feeder_->drain();
    }
    if (ours || !source_) {
      if (run_->status() == RunStatus::Running) {
        RunBatch end;
        end.finished = true;
        end.status = code == 0 && !crashed ? RunStatus::Finished : RunStatus::Failed;
        end.status_reason = why.toStdString();
        run_->append(end);
      }
    }
    updateStatus();
  });
  updateStatus();
}

void MainWindow::stopRun() {
  if (engine_ && engine_->isRunning()) {
    log(tr("stopping the engine"));
    // Said now, so the engine's own report of being interrupted (a
    // failure, to it) does not read as one here.
    RunBatch stopped;
    stopped.status = RunStatus::Stopped;
    stopped.status_reason = "stopped from the studio";
    run_->append(stopped);
    // Ask the engine over its control socket first (a graceful stop saves
    // the run); terminate it if it is still there kGracefulStopMs later.
    if (source_ && source_.get() == launched_source_.data() && source_->canControl()) {
      source_->requestStop();
      QPointer<EngineProcess> e = engine_;
      QTimer::singleShot(kGracefulStopMs, this, [e] {
        if (e && e->isRunning()) e->stop();
      });
    } else {
      engine_->stop();
    }
  } else if (source_) {
    source_->requestStop();
  }
}

void MainWindow::onAttach() {
  AttachDialog d(this);
  if (d.exec() != QDialog::Accepted || d.request().target.isEmpty()) return;
  d.remember();
  attach(d.request());
}

bool MainWindow::attach(const AttachRequest& req) {
  QString error;
  RunSource* src = make_attach_source(req, &error);
  if (!src) {
    log(tr("cannot attach to %1: %2").arg(req.target, error));
    statusBar()->showMessage(tr("Cannot attach: %1").arg(error), 10000);
    source_error_ = error;
    updateStatus();
    return false;
  }
  setSource(src);
  return true;
}

void MainWindow::pauseRun() {
  if (!source_ || !source_->canControl()) return;
  log(tr("asking the engine to pause"));
  source_->pause();
}

void MainWindow::resumeRun() {
  if (!source_ || !source_->canControl()) return;
  log(tr("asking the engine to resume"));
  source_->resume();
}

}  // namespace pw::gui
