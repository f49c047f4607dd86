// The window itself: the Monitor/Designer/Compare tabs, the views wired to
// the one RunModel, the docks, the title, the log, and closing.
#include "gui/widgets/main_window.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTime>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/models/engine_process.h"
#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/models/migrations_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/widgets/compare_widget.h"
#include "gui/widgets/search_view.h"
#include "gui/widgets/designer_widget.h"
#include "gui/widgets/explain_dock.h"
#include "gui/widgets/memory_view.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/range_stats_widget.h"
#include "gui/widgets/replay_bar.h"
#include "gui/widgets/subnet_graph_view.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_view.h"

namespace pw::gui {

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
  search_ = new SearchView(this);
  tabs_->addTab(search_, QIcon(QStringLiteral(":/icons/zoom-fit.svg")), tr("Search"));
  tabs_->setDocumentMode(true);
  setCentralWidget(tabs_);

  explain_model_ = new ExplainModel(this);
  explain_ = new ExplainDock(explain_model_, job_, this);
  timeline_->setRun(run_);
  explain_model_->setRun(run_);
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
  // Explain: a clicked cause is shaded on the timeline (refreshed with the
  // attribution while the run grows); Apply edits the designer's job.
  connect(explain_, &ExplainDock::causeSelected, this, [this](IdleCause c, int stage, const QColor& color) {
    timeline_->highlightIdle(explain_model_->intervalsOf(c, stage), color);
  });
  connect(explain_, &ExplainDock::causeCleared, this, [this] { timeline_->highlightIdle({}, QColor()); });
  // Show predicted: the simulator's timeline under the measured one, as
  // the model computes it (with the attribution, off this thread).
  connect(explain_model_, &ExplainModel::updated, this, [this] {
    timeline_->setPredicted(explain_model_->showPredicted() ? explain_model_->result().predicted : nullptr);
  });
  connect(explain_->showPredictedAction(), &QAction::toggled, this, [this](bool on) {
    if (!on) timeline_->setPredicted(nullptr);
  });
  connect(explain_, &ExplainDock::suggestionApplied, this, [this](const QString& change) {
    log(tr("applied to the designer's job: %1").arg(change));
    statusBar()->showMessage(tr("Applied to the designer's job: %1").arg(change), 8000);
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
  auto* ex = dock(tr("Explain"), "dock.explain", explain_, Qt::RightDockWidgetArea);
  auto* pl = dock(tr("Plan"), "dock.plan", plan_, Qt::RightDockWidgetArea);
  auto* mg = dock(tr("Migrations"), "dock.migrations", migrations_view_, Qt::RightDockWidgetArea);
  auto* gr = dock(tr("Subnet Graph"), "dock.graph", graph_, Qt::RightDockWidgetArea);
  auto* me = dock(tr("Memory"), "dock.memory", memory_, Qt::BottomDockWidgetArea);
  auto* tp = dock(tr("Throughput"), "dock.throughput", throughput_, Qt::BottomDockWidgetArea);
  auto* lg = dock(tr("Log"), "dock.log", log_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(st, ex);
  st->raise();
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

void MainWindow::updateTitle() {
  QString job = job_->fileName().isEmpty() ? QString::fromStdString(job_->document().value("name", std::string("untitled"))) : QFileInfo(job_->fileName()).fileName();
  setWindowTitle(tr("%1%2 — Pipewright Studio").arg(job, job_->isModified() ? QStringLiteral("*") : QString()));
}

void MainWindow::log(const QString& line) {
  log_->appendPlainText(QStringLiteral("[%1] %2").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), line));
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

}  // namespace pw::gui
