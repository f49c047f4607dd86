#pragma once
#include <QMainWindow>
#include <QPointer>
#include <memory>

#include "core/spec/job_spec.h"

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QTableView;
class QTabWidget;
class QTimer;

namespace pw::gui {

class CompareWidget;
class SearchView;
struct AttachRequest;
struct LaunchRequest;
class DesignerWidget;
class EngineProcess;
class ExplainDock;
class ExplainModel;
class JobModel;
class MemoryView;
class MigrationsModel;
class PlanView;
class RangeStatsWidget;
class ReplayBar;
class ReplicaSelector;
class RunFeeder;
class RunModel;
class RunSource;
class SubnetGraphView;
class ThroughputView;
class TimelineView;

// The studio's main window: Monitor (timeline + replay bar, with docks for
// range statistics, memory, throughput, plan, migrations, subnet graph and
// log), Designer and Compare tabs. One RunModel is shared by every view; a
// RunSource feeds it from a worker thread through a RunFeeder tick.
// Defined by job: main_window.cpp (tabs, views, docks, closing),
// main_window_actions.cpp (actions, menus), main_window_files.cpp (open,
// save, export, recent files, drag and drop), main_window_runs.cpp (the
// monitored run's source, replay cursor, compare, status bar),
// main_window_live.cpp (launch, attach, pause/resume/stop).
class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a run database (.db/.sqlite/.pwrun) or a job file (.json, into
  // the designer). Returns false and shows why on failure.
  bool openFile(const QString& file);
  // Monitors the recorded run in `file`, data-parallel replica `replica`'s
  // pipeline (what the replica selector switches between).
  bool openRecording(const QString& file, int replica = 0);
  // Replaces the monitored run by `source` (owned from now on) and starts it.
  void setSource(RunSource* source);
  // Simulates the designer's job as a run; speed 0 = all at once.
  bool simulateJob(int iterations = 20, double speed = 0);
  bool compareWith(RunSource* source);
  // A run database, or a job file (compared as simulated).
  bool compareWithFile(const QString& file);
  // Starts the engine as a child process and follows its run live once it
  // says where it publishes; false while an engine launched from here
  // still runs. When the engine exits the run's status is settled from its
  // own last report, or from its exit (a killed engine shows as failed).
  bool launch(const LaunchRequest& req);
  EngineProcess* engine() const { return engine_; }
  // Attaches to a running coordinator (or opens a run database); false with
  // the reason in the status bar when the request cannot be used. A
  // coordinator that does not answer (wrong key, nothing there) shows as
  // failed within LiveRunSource::kSilenceMs.
  bool attach(const AttachRequest& req);
  // The last reason the monitored source gave up, or empty.
  QString sourceError() const { return source_error_; }
  // Stop: a launched engine is terminated; an attached run is asked to stop.
  void stopRun();
  // Pause / resume the live run (Run menu); the status bar says "paused"
  // once the engine reports every stage holding.
  void pauseRun();
  void resumeRun();

  RunModel* run() const { return run_; }
  RunFeeder* feeder() const { return feeder_; }
  RunSource* source() const { return source_.get(); }
  JobModel* job() const { return job_; }
  TimelineView* timeline() const { return timeline_; }
  ReplayBar* replayBar() const { return replay_; }
  RangeStatsWidget* rangeStats() const { return stats_; }
  ReplicaSelector* replicaSelector() const { return replica_; }
  // Whether the toolbar shows the replica selector (a run with replicas).
  bool replicaSelectorShown() const;
  MemoryView* memoryView() const { return memory_; }
  ThroughputView* throughputView() const { return throughput_; }
  PlanView* planView() const { return plan_; }
  ExplainDock* explainDock() const { return explain_; }
  ExplainModel* explainModel() const { return explain_model_; }
  QTableView* migrationsView() const { return migrations_view_; }
  SubnetGraphView* subnetGraph() const { return graph_; }
  DesignerWidget* designer() const { return designer_; }
  CompareWidget* compare() const { return compare_; }
  SearchView* search() const { return search_; }
  QTabWidget* tabs() const { return tabs_; }
  void showTab(const QString& objectName);
  QString statusText() const;

 protected:
  void closeEvent(QCloseEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void buildActions();
  void buildMenus();
  void buildDocks();
  void setCursor(qint64 t);
  void addRecent(const QString& file);
  void rebuildRecentMenu();
  void updateStatus();
  void updateTitle();
  void onOpen();
  void onOpenJob();
  void onSaveJob(bool as);
  void onExportPlot();
  void onExportTrace(bool csv);
  void onLaunch();
  void onAttach();
  void onCompare();
  void onFreeze(bool on);
  void onAbout();
  void log(const QString& line);

  RunModel* run_;
  RunFeeder* feeder_;
  std::unique_ptr<RunSource> source_;
  JobModel* job_;
  QTabWidget* tabs_;
  TimelineView* timeline_;
  ReplayBar* replay_;
  RangeStatsWidget* stats_;
  MemoryView* memory_;
  ThroughputView* throughput_;
  PlanView* plan_;
  ExplainModel* explain_model_ = nullptr;
  ExplainDock* explain_ = nullptr;
  MigrationsModel* migrations_;
  QTableView* migrations_view_;
  SubnetGraphView* graph_;
  DesignerWidget* designer_;
  CompareWidget* compare_;
  SearchView* search_;
  QPlainTextEdit* log_;
  QLabel* status_source_;
  QLabel* status_events_;
  QLabel* status_cursor_;
  QTimer* status_timer_;
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  void onEngineExited(int code, bool crashed, const QString& why);
  EngineProcess* engine_ = nullptr;
  QPointer<RunSource> launched_source_;
  QString source_error_;  // the live source of the launched engine
  QString launched_job_file_;  // the job the launched engine runs (Explain's suggestions)
  QAction *open_, *open_job_, *save_job_, *save_job_as_, *export_plot_, *export_trace_, *export_csv_, *quit_;
  QAction *simulate_, *launch_, *attach_, *pause_, *resume_, *stop_, *rebalance_, *freeze_, *compare_act_;
  QAction *fit_, *play_, *dark_, *light_, *about_;
  ReplicaSelector* replica_ = nullptr;
  QAction* replica_action_ = nullptr;  // the selector's place in the toolbar
};

}  // namespace pw::gui
