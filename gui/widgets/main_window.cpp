#include "gui/widgets/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <fstream>
#include <qcustomplot.h>

#include "gui/models/engine_process.h"
#include "gui/models/job_model.h"
#include "gui/models/migrations_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_export.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"
#include "gui/widgets/compare_widget.h"
#include "gui/widgets/designer_widget.h"
#include "gui/widgets/memory_view.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/plot_export.h"
#include "gui/widgets/range_stats_widget.h"
#include "gui/widgets/replay_bar.h"
#include "gui/widgets/run_launcher.h"
#include "gui/widgets/subnet_graph_view.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_view.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_run_source.h"
#endif

namespace pw::gui {
namespace {
constexpr int kMaxRecent = 10;
// How long the launched engine's final telemetry may trail its exit.
constexpr int kEngineSettleMs = 500;
// How long a launched engine asked to stop may take before it is terminated.
constexpr int kGracefulStopMs = 3000;
bool is_run_file(const QString& f) {
  const QString ext = QFileInfo(f).suffix().toLower();
  return ext == "db" || ext == "sqlite" || ext == "pwrun" || ext == "sqlite3";
}
}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      run_(new RunModel(this)),
      feeder_(new RunFeeder(run_, this)),
      job_(new JobModel(this)),
      tabs_(new QTabWidget(this)),
      timeline_(new TimelineView(this)),
      replay_(new ReplayBar(this)),
      stats_(new RangeStatsWidget(this)),
      memory_(new MemoryView(this)),
      throughput_(new ThroughputView(this)),
      plan_(new PlanView(this)),
      migrations_(new MigrationsModel(run_, this)),
      migrations_view_(new QTableView(this)),
      graph_(new SubnetGraphView(this)),
      designer_(nullptr),
      compare_(nullptr),
      log_(new QPlainTextEdit(this)),
      status_source_(new QLabel(this)),
      status_events_(new QLabel(this)),
      status_cursor_(new QLabel(this)),
      status_timer_(new QTimer(this)) {
  init_resources();
  setObjectName(QStringLiteral("mainWindow"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/pipewright.svg")));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

  auto* monitor = new QWidget(this);
  monitor->setObjectName(QStringLiteral("monitor"));
  auto* mlay = new QVBoxLayout(monitor);
  mlay->setContentsMargins(0, 0, 0, 0);
  mlay->setSpacing(0);
  mlay->addWidget(timeline_, 1);
  mlay->addWidget(replay_);
  designer_ = new DesignerWidget(job_, this);
  compare_ = new CompareWidget(run_, this);
  tabs_->addTab(monitor, QIcon(QStringLiteral(":/icons/simulate.svg")), tr("Monitor"));
  tabs_->addTab(designer_, QIcon(QStringLiteral(":/icons/designer.svg")), tr("Designer"));
  tabs_->addTab(compare_, QIcon(QStringLiteral(":/icons/compare.svg")), tr("Compare"));
  tabs_->setDocumentMode(true);
  setCentralWidget(tabs_);

  timeline_->setRun(run_);
  replay_->setRun(run_);
  stats_->setRun(run_);
  memory_->setRun(run_);
  throughput_->setRun(run_);
  plan_->setRun(run_);
  graph_->setRun(run_);
  migrations_view_->setModel(migrations_);
  migrations_view_->setObjectName(QStringLiteral("migrationsTable"));
  migrations_view_->verticalHeader()->setVisible(false);
  migrations_view_->horizontalHeader()->setStretchLastSection(true);
  log_->setReadOnly(true);
  log_->setObjectName(QStringLiteral("log"));
  log_->setMaximumBlockCount(5000);

  connect(timeline_, &TimelineView::rangeSelected, stats_, &RangeStatsWidget::showRange);
  connect(timeline_, &TimelineView::selectionCleared, stats_, &RangeStatsWidget::clear);
  connect(timeline_, &TimelineView::visibleRangeChanged, memory_, &MemoryView::setTimeRange);
  connect(timeline_, &TimelineView::eventClicked, this, [this](const Event& e) {
    statusBar()->showMessage(tr("%1 of microbatch %2 on stage %3: %4")
                                 .arg(QLatin1String(to_string(e.kind)))
                                 .arg(e.microbatch)
                                 .arg(e.stage)
                                 .arg(format_duration_ns(static_cast<double>(e.end_ns - e.start_ns))),
                             5000);
  });
  connect(replay_, &ReplayBar::cursorChanged, this, &MainWindow::setCursor);
  connect(run_, &RunModel::reset, stats_, &RangeStatsWidget::clear);
  connect(designer_, &DesignerWidget::simulateRequested, this, [this] { simulateJob(); });
  connect(designer_, &DesignerWidget::launchRequested, this, &MainWindow::onLaunch);
  connect(job_, &JobModel::fileChanged, this, &MainWindow::updateTitle);
  connect(job_, &JobModel::changed, this, &MainWindow::updateTitle);

  buildActions();
  buildMenus();
  buildDocks();

  statusBar()->addWidget(status_source_, 1);
  statusBar()->addPermanentWidget(status_events_);
  statusBar()->addPermanentWidget(status_cursor_);
  status_cursor_->setMinimumWidth(110);
  status_cursor_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  status_timer_->setInterval(500);
  connect(status_timer_, &QTimer::timeout, this, &MainWindow::updateStatus);
  status_timer_->start();

  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  updateStatus();
  updateTitle();
}

MainWindow::~MainWindow() {
  feeder_->setSource(nullptr);
  source_.reset();
  delete engine_;  // kills an engine still running: it would outlive its monitor
}

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
}

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

void MainWindow::buildDocks() {
  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    view_menu_->addAction(d->toggleViewAction());
    return d;
  };
  auto* st = dock(tr("Range Statistics"), "dock.stats", stats_, Qt::RightDockWidgetArea);
  auto* pl = dock(tr("Plan"), "dock.plan", plan_, Qt::RightDockWidgetArea);
  auto* mg = dock(tr("Migrations"), "dock.migrations", migrations_view_, Qt::RightDockWidgetArea);
  auto* gr = dock(tr("Subnet Graph"), "dock.graph", graph_, Qt::RightDockWidgetArea);
  auto* me = dock(tr("Memory"), "dock.memory", memory_, Qt::BottomDockWidgetArea);
  auto* tp = dock(tr("Throughput"), "dock.throughput", throughput_, Qt::BottomDockWidgetArea);
  auto* lg = dock(tr("Log"), "dock.log", log_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(pl, mg);
  tabifyDockWidget(mg, gr);
  pl->raise();
  splitDockWidget(me, tp, Qt::Horizontal);
  tabifyDockWidget(tp, lg);
  tp->raise();
  resizeDocks({st, pl}, {420, 420}, Qt::Horizontal);
  resizeDocks({me, tp}, {700, 700}, Qt::Horizontal);
  resizeDocks({me}, {230}, Qt::Vertical);
}

void MainWindow::showTab(const QString& name) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (tabs_->widget(i)->objectName() == name) tabs_->setCurrentIndex(i);
}

void MainWindow::setSource(RunSource* source) {
  feeder_->setSource(nullptr);
  source_.reset(source);
  freeze_->setChecked(false);
  replay_->goLive();
  run_->clear();
  source_error_.clear();
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
  return true;
}

bool MainWindow::openFile(const QString& file) {
  if (!QFileInfo::exists(file)) {
    QMessageBox::warning(this, tr("Open"), tr("\"%1\" does not exist.").arg(file));
    return false;
  }
  if (QFileInfo(file).suffix().toLower() == "json") {
    QString err;
    if (!job_->load(file, &err)) {
      QMessageBox::warning(this, tr("Open Job"), err);
      return false;
    }
    addRecent(file);
    showTab(QStringLiteral("designer"));
    return true;
  }
#ifdef PW_STUDIO_HAVE_DB
  setSource(new DbRunSource(file.toStdString()));
  addRecent(file);
  return true;
#else
  QMessageBox::warning(this, tr("Open Run"), tr("This studio was built without the run database (pw_db)."));
  return false;
#endif
}

void MainWindow::onOpen() {
  QSettings s;
  QString file = QFileDialog::getOpenFileName(this, tr("Open Run"), s.value("files/lastDir").toString(),
                                              tr("Runs and jobs (*.db *.sqlite *.pwrun *.json);;All files (*)"));
  if (file.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(file).absolutePath());
  openFile(file);
}

void MainWindow::onOpenJob() {
  QSettings s;
  QString file = QFileDialog::getOpenFileName(this, tr("Open Job"), s.value("files/lastDir").toString(), tr("Job specs (*.json)"));
  if (file.isEmpty()) return;
  s.setValue("files/lastDir", QFileInfo(file).absolutePath());
  openFile(file);
}

void MainWindow::onSaveJob(bool as) {
  QString file = job_->fileName();
  if (as || file.isEmpty()) {
    file = QFileDialog::getSaveFileName(this, tr("Save Job"), file.isEmpty() ? QString::fromStdString(job_->document().value("name", "job")) + ".json" : file,
                                        tr("Job specs (*.json)"));
    if (file.isEmpty()) return;
  }
  QString err;
  if (!job_->save(file, &err)) {
    QMessageBox::warning(this, tr("Save Job"), err);
    return;
  }
  addRecent(file);
  statusBar()->showMessage(tr("Saved %1").arg(file), 4000);
}

void MainWindow::onExportPlot() {
  // The plot under focus, or the timeline.
  QCustomPlot* plot = nullptr;
  for (QWidget* w = QApplication::focusWidget(); w && !plot; w = w->parentWidget()) plot = qobject_cast<QCustomPlot*>(w);
  if (!plot) plot = tabs_->currentWidget() == compare_ ? nullptr : timeline_->plot();
  QWidget* other = nullptr;
  if (!plot && tabs_->currentWidget() == compare_) other = compare_;
  QString file = QFileDialog::getSaveFileName(this, tr("Export Plot"), QStringLiteral("plot.png"),
                                              tr("PNG image (*.png);;PDF document (*.pdf);;SVG drawing (*.svg)"));
  if (file.isEmpty()) return;
  QString err = plot ? export_plot(plot, file) : export_widget(other, file);
  if (!err.isEmpty()) QMessageBox::warning(this, tr("Export"), err);
  else statusBar()->showMessage(tr("Exported %1").arg(file), 4000);
}

void MainWindow::onExportTrace(bool csv) {
  QString file = QFileDialog::getSaveFileName(this, csv ? tr("Export Events CSV") : tr("Export Chrome Trace"),
                                              csv ? QStringLiteral("events.csv") : QStringLiteral("trace.json"),
                                              csv ? tr("CSV (*.csv)") : tr("Chrome trace (*.json)"));
  if (file.isEmpty()) return;
  std::ofstream out(file.toStdString());
  if (!out) {
    QMessageBox::warning(this, tr("Export"), tr("cannot write \"%1\"").arg(file));
    return;
  }
  csv ? export_events_csv(*run_, out) : export_chrome_trace(*run_, out);
  statusBar()->showMessage(tr("Exported %1").arg(file), 4000);
}

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
    });
    connect(engine_, &EngineProcess::exited, this, &MainWindow::onEngineExited);
  }
  setSource(nullptr);
  launched_source_ = nullptr;
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

void MainWindow::addRecent(const QString& file) {
  QSettings s;
  QStringList list = s.value("files/recent").toStringList();
  QString abs = QFileInfo(file).absoluteFilePath();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMaxRecent) list.removeLast();
  s.setValue("files/recent", list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList list = QSettings().value("files/recent").toStringList();
  for (int i = 0; i < list.size(); ++i) {
    auto* a = recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(list[i]).fileName()));
    a->setToolTip(list[i]);
    const QString f = list[i];
    connect(a, &QAction::triggered, this, [this, f] { openFile(f); });
  }
  recent_menu_->setEnabled(!list.isEmpty());
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
  qint64 c = replay_->cursor();
  status_cursor_->setText(c == INT64_MAX ? tr("live") : tr("t = %1").arg(format_duration_ns(static_cast<double>(c - run_->beginNs()))));
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

void MainWindow::updateTitle() {
  QString job = job_->fileName().isEmpty() ? QString::fromStdString(job_->document().value("name", std::string("untitled"))) : QFileInfo(job_->fileName()).fileName();
  setWindowTitle(tr("%1%2 — Pipewright Studio").arg(job, job_->isModified() ? QStringLiteral("*") : QString()));
}

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QStringLiteral("[%1] %2").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), line));
}

void MainWindow::onAbout() {
  QMessageBox::about(this, tr("About Pipewright Studio"),
                     tr("<h3>Pipewright Studio %1</h3>"
                        "<p>Design pipeline-parallel and supernet training jobs, launch them, watch them live, "
                        "replay and compare recorded runs.</p>"
                        "<p>Built with Qt %2, QCustomPlot and Graphviz.</p>")
                         .arg(QStringLiteral(PW_VERSION), QString::fromLatin1(qVersion())));
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (job_->isModified() && !job_->fileName().isEmpty()) {
    auto r = QMessageBox::question(this, tr("Unsaved job"), tr("Save changes to the job before closing?"),
                                   QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (r == QMessageBox::Cancel) return e->ignore();
    if (r == QMessageBox::Save) onSaveJob(false);
  }
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile() && (is_run_file(u.toLocalFile()) || QFileInfo(u.toLocalFile()).suffix().toLower() == "json")) {
      e->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* e) {
  for (const QUrl& u : e->mimeData()->urls())
    if (u.isLocalFile()) {
      openFile(u.toLocalFile());
      break;
    }
}

}  // namespace pw::gui
