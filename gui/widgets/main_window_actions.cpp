// The window's actions (with their shortcuts and icons), toolbar, menus and
// About box.
#include "gui/widgets/main_window.h"

#include <QActionGroup>
#include <QApplication>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QToolBar>
#include <qcustomplot.h>

#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_run_source.h"
#endif
#ifdef PW_STUDIO_HAVE_IPC
#include "gui/sources/live_run_source.h"
#endif
#include "gui/widgets/replica_selector.h"
#include "gui/widgets/replay_bar.h"
#include "gui/widgets/subnet_graph_view.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/timeline_view.h"

namespace pw::gui {

void MainWindow::buildActions() {
  auto make = [this](const QString& text, const QString& icon, const QKeySequence& key, const QString& tip) {
    auto* a = new QAction(icon.isEmpty() ? QIcon() : QIcon(QStringLiteral(":/icons/%1.svg").arg(icon)), text, this);
    if (!key.isEmpty()) a->setShortcut(key);
    a->setStatusTip(tip);
    a->setToolTip(tip + (key.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(key.toString(QKeySequence::NativeText))));
    return a;
  };
  open_ = make(tr("&Open Run…"), "open", QKeySequence::Open, tr("Open a recorded run database"));
  open_job_ = make(tr("Open &Job…"), "new", QKeySequence(tr("Ctrl+Shift+O")), tr("Open a job spec in the designer"));
  save_job_ = make(tr("&Save Job"), "save", QKeySequence::Save, tr("Save the job spec"));
  save_job_as_ = make(tr("Save Job &As…"), "", QKeySequence::SaveAs, tr("Save the job spec under a new name"));
  export_plot_ = make(tr("&Export Plot…"), "export", QKeySequence(tr("Ctrl+E")), tr("Export the focused plot as PNG, PDF or SVG"));
  export_trace_ = make(tr("Export Chrome &Trace…"), "", {}, tr("Export the run for chrome://tracing / Perfetto"));
  export_csv_ = make(tr("Export Events &CSV…"), "", {}, tr("Export the run's events as CSV"));
  quit_ = make(tr("&Quit"), "", QKeySequence::Quit, tr("Quit the studio"));
  simulate_ = make(tr("&Simulate Job"), "simulate", QKeySequence(Qt::Key_F5), tr("Run the designer's job on the simulator and monitor it"));
  launch_ = make(tr("&Launch…"), "launch", QKeySequence(tr("Ctrl+R")), tr("Start `pipewright run` for the job and monitor it live"));
  attach_ = make(tr("&Attach…"), "attach", QKeySequence(tr("Ctrl+Shift+A")), tr("Attach to a running coordinator by endpoint"));
  pause_ = make(tr("&Pause"), "pause", QKeySequence(tr("Ctrl+P")), tr("Pause the live run"));
  resume_ = make(tr("&Resume"), "play", QKeySequence(tr("Ctrl+Shift+P")), tr("Resume the live run"));
  stop_ = make(tr("S&top"), "stop", QKeySequence(tr("Ctrl+.")), tr("Stop the live run"));
  rebalance_ = make(tr("Re&balance"), "rebalance", QKeySequence(tr("Ctrl+B")), tr("Ask the coordinator to replan now"));
  freeze_ = make(tr("&Freeze View"), "freeze", QKeySequence(tr("Ctrl+F")), tr("Freeze the views for inspection while data keeps arriving"));
  freeze_->setCheckable(true);
  compare_act_ = make(tr("&Compare With…"), "compare", QKeySequence(tr("Ctrl+K")), tr("Open a second run to compare with this one"));
  fit_ = make(tr("Zoom to &Fit"), "zoom-fit", QKeySequence(tr("Ctrl+0")), tr("Show the whole run"));
  play_ = make(tr("Play/Pause Replay"), "play", QKeySequence(Qt::Key_Space), tr("Play or pause the replay"));
  dark_ = make(tr("&Dark Theme"), "", {}, tr("Dark palette"));
  light_ = make(tr("&Light Theme"), "", {}, tr("Light palette"));
  dark_->setCheckable(true);
  light_->setCheckable(true);
  auto* group = new QActionGroup(this);
  group->addAction(dark_);
  group->addAction(light_);
  (current_theme() == Theme::Dark ? dark_ : light_)->setChecked(true);
  about_ = make(tr("&About Pipewright Studio"), "about", {}, tr("Version and credits"));

  connect(open_, &QAction::triggered, this, &MainWindow::onOpen);
  connect(open_job_, &QAction::triggered, this, &MainWindow::onOpenJob);
  connect(save_job_, &QAction::triggered, this, [this] { onSaveJob(false); });
  connect(save_job_as_, &QAction::triggered, this, [this] { onSaveJob(true); });
  connect(export_plot_, &QAction::triggered, this, &MainWindow::onExportPlot);
  connect(export_trace_, &QAction::triggered, this, [this] { onExportTrace(false); });
  connect(export_csv_, &QAction::triggered, this, [this] { onExportTrace(true); });
  connect(quit_, &QAction::triggered, this, &QWidget::close);
  connect(simulate_, &QAction::triggered, this, [this] { simulateJob(); });
  connect(launch_, &QAction::triggered, this, &MainWindow::onLaunch);
  connect(attach_, &QAction::triggered, this, &MainWindow::onAttach);
  connect(pause_, &QAction::triggered, this, &MainWindow::pauseRun);
  connect(resume_, &QAction::triggered, this, &MainWindow::resumeRun);
  connect(stop_, &QAction::triggered, this, &MainWindow::stopRun);
  connect(rebalance_, &QAction::triggered, this, [this] { if (source_) source_->rebalance(); });
  connect(freeze_, &QAction::toggled, this, &MainWindow::onFreeze);
  connect(compare_act_, &QAction::triggered, this, &MainWindow::onCompare);
  connect(fit_, &QAction::triggered, timeline_, &TimelineView::zoomToFit);
  connect(play_, &QAction::triggered, replay_, &ReplayBar::togglePlay);
  auto theme = [this](Theme t) {
    apply_theme(t);
    QSettings().setValue("view/theme", t == Theme::Dark ? "dark" : "light");
    for (auto* plot : findChildren<QCustomPlot*>()) {
      style_plot(plot);
      plot->replot(QCustomPlot::rpQueuedReplot);
    }
    graph_->relayout();
  };
  connect(dark_, &QAction::triggered, this, [theme] { theme(Theme::Dark); });
  connect(light_, &QAction::triggered, this, [theme] { theme(Theme::Light); });
  connect(about_, &QAction::triggered, this, &MainWindow::onAbout);

  auto* tb = addToolBar(tr("Main"));
  tb->setObjectName(QStringLiteral("mainToolbar"));
  tb->addActions({open_, open_job_, save_job_});
  tb->addSeparator();
  tb->addActions({simulate_, launch_, attach_});
  tb->addSeparator();
  tb->addActions({pause_, resume_, stop_, rebalance_});
  tb->addSeparator();
  tb->addActions({freeze_, fit_, compare_act_, export_plot_});
  // A run with data-parallel replicas: which replica's pipeline is shown.
  replica_ = new ReplicaSelector(this);
  replica_action_ = tb->addWidget(replica_);
  replica_action_->setVisible(false);
  connect(run_, &RunModel::changed, this, [this] {
    replica_->showRun(run_->info());
    replica_action_->setVisible(replica_->relevant());
  });
  connect(replica_, &ReplicaSelector::replicaChosen, this, [this](int r) {
#ifdef PW_STUDIO_HAVE_DB
    if (auto* db = dynamic_cast<DbRunSource*>(source_.get())) return (void)openRecording(QString::fromStdString(db->path()), r);
#endif
#ifdef PW_STUDIO_HAVE_IPC
    // A live run: reattached showing that replica's pipeline from now on
    // (the telemetry holds no history to replay).
    if (auto* live = dynamic_cast<LiveRunSource*>(source_.get()))
      return setSource(new LiveRunSource(live->endpoint(), live->curve(), nullptr, r));
#endif
    (void)r;
  });
}

bool MainWindow::replicaSelectorShown() const { return replica_action_ && replica_action_->isVisible(); }

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addActions({open_, open_job_});
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();
  file->addSeparator();
  file->addActions({save_job_, save_job_as_});
  file->addSeparator();
  file->addActions({export_plot_, export_trace_, export_csv_});
  file->addSeparator();
  file->addAction(quit_);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addActions({simulate_, launch_, attach_});
  run->addSeparator();
  run->addActions({pause_, resume_, stop_, rebalance_});
  run->addSeparator();
  run->addActions({freeze_, play_, compare_act_});
  view_menu_ = menuBar()->addMenu(tr("&View"));
  view_menu_->addAction(fit_);
  view_menu_->addSeparator();
  view_menu_->addActions({light_, dark_});
  view_menu_->addSeparator();
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(about_);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::onAbout() {
  QMessageBox::about(this, tr("About Pipewright Studio"),
                     tr("<h3>Pipewright Studio %1</h3>"
                        "<p>Design pipeline-parallel and supernet training jobs, launch them, watch them live, "
                        "replay and compare recorded runs.</p>"
                        "<p>Built with Qt %2, QCustomPlot and Graphviz.</p>")
                         .arg(QStringLiteral(PW_VERSION), QString::fromLatin1(qVersion())));
}

}  // namespace pw::gui
