#pragma once
#include <QFutureWatcher>
#include <QMap>
#include <QTimer>
#include <QWidget>

#include "gui/models/prediction.h"
#include "gui/widgets/model_inspector.h"

class QCustomPlot;
class QGridLayout;
class QLabel;
class QPlainTextEdit;
class QProcess;
class QPushButton;
class QTableView;
class QTabWidget;

namespace pw::gui {

class JobModel;
class JsonKeyEditor;
class LayerTableModel;
class SearchSpaceEditor;
class PlanView;
class PlannerComparisonModel;
class RunModel;
class SupernetComparisonModel;
class TimelineView;

// The job designer: a form over every job spec field, with the validation
// error shown under the field it names (SpecError's path). As the user
// edits, the planners and the simulator run on a worker thread
// (QtConcurrent; only the newest edit's result is shown, one computation
// in flight at a time) and the right side shows the predicted partition,
// memory against the budget, one iteration's timeline, and every planner
// side by side.
class DesignerWidget : public QWidget {
  Q_OBJECT
 public:
  explicit DesignerWidget(JobModel* job, QWidget* parent = nullptr);
  ~DesignerWidget() override;

  // The editor of a field and its error label, by JSON path; the search
  // space's too ("search_space.window").
  QWidget* editorFor(const QString& path) const;
  QLabel* errorLabelFor(const QString& path) const;
  QString generalError() const;
  bool predictionPending() const;
  const Prediction& prediction() const { return prediction_; }
  SearchSpaceEditor* searchSpace() const { return search_space_; }
  PlanView* planView() const { return plan_view_; }
  TimelineView* timeline() const { return timeline_; }
  QCustomPlot* memoryPlot() const { return memory_plot_; }
  PlannerComparisonModel* comparison() const { return comparison_; }
  // A supernet job's side-by-side table (the same tab, "Modes").
  SupernetComparisonModel* supernetComparison() const { return supernet_comparison_; }
  // The prediction on screen is the last valid job's, not this one's.
  bool predictionStale() const { return stale_; }
  // The layer table: the job's profile, or a TorchScript file's children
  // (read by `pipewright profile` in a child process: name, class,
  // parameters, costs).
  LayerTableModel* layers() const { return layers_; }
  QTableView* layerTable() const { return layer_table_; }
  bool inspectionPending() const;
  // Measures the TorchScript model's layers with `pipewright profile` in a
  // child process, shows the costs, saves them beside the model
  // (MODEL.pt.profile.json) and sets model.profile so the prediction uses
  // them. False if there is nothing to measure.
  bool measureLayers();
  bool measuring() const;
  void showLayersTab();

 signals:
  void predictionUpdated();
  void simulateRequested();
  void launchRequested();

 private:
  struct Field {
    QString path;
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
    QWidget* label = nullptr;  // the row's caption
    QWidget* row = nullptr;    // editor + error label; hidden with the caption when its kind does not apply
    QStringList kinds;  // model kinds it applies to (model.* only); empty = all
  };
  void buildForm(QWidget* host);
  void addField(QGridLayout* form, const QString& path, const QString& label, QWidget* editor,
                const QStringList& kinds = {}, const QString& tip = {}, QWidget* extra = nullptr);
  QVariant editorValue(const Field& f) const;
  void setEditorValue(const Field& f, const QVariant& v);
  void onEditorChanged(const QString& path);
  void onKindChanged();
  void loadFromModel();
  void showValidation();
  void schedulePrediction();
  void startPrediction();
  void applyPrediction(const Prediction& p);
  void applySupernetPrediction(const SupernetPrediction& s);  // designer_supernet.cpp
  void showComparison(bool supernet);  // which table and caption the prediction fills
  void setPredictionStale(bool stale);
  void plotMemory(const std::vector<double>& peak_bytes, const std::vector<double>& budget_bytes);
  void updateKindVisibility();
  QString modelPath() const;  // model.path resolved against the job file
  void inspectModel();
  void applyInspection(const ModelInspection& r);
  bool runProfiler(bool measure);  // measure: 10 timed runs, then set model.profile

  JobModel* job_;
  QMap<QString, Field> fields_;
  QLabel* general_error_;
  SearchSpaceEditor* search_space_;
  JsonKeyEditor* data_;
  QLabel* summary_;
  PlanView* plan_view_;
  QCustomPlot* memory_plot_;
  QTableView* table_;
  PlannerComparisonModel* comparison_;
  SupernetComparisonModel* supernet_comparison_;
  QLabel* partition_caption_;
  QList<QWidget*> prediction_views_;  // greyed while the prediction is stale
  TimelineView* timeline_;
  RunModel* predicted_run_;
  QTimer debounce_;
  QFutureWatcher<Prediction> watcher_;
  QTabWidget* right_tabs_;
  LayerTableModel* layers_;
  QTableView* layer_table_;
  QLabel* layer_source_;
  QPushButton* measure_;
  bool inspect_measuring_ = false;   // the result being applied is a measurement
  QProcess* profiler_ = nullptr;     // `pipewright profile` while measuring
  QString inspected_path_;           // the file the table shows
  QString inspect_error_;            // shown under model.path
  Prediction prediction_;
  bool loading_ = false;
  bool stale_ = false;
  bool in_flight_ = false;  // a prediction started and not yet shown
  bool editing_ = false;  // the form itself is changing the job
  bool again_ = false;  // an edit arrived while a prediction was running
  quint64 requested_revision_ = 0;
};

}  // namespace pw::gui
