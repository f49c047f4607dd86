#pragma once
#include <QWidget>

class QComboBox;
class QCustomPlot;
class QCPItemRect;

namespace pw::gui {

class RunModel;

// Resident memory over time against the budget: every stage's total at
// once, or one stage stacked by category (parameters, optimizer state,
// stashed weights, activations, ...). Live data is appended incrementally;
// in replay the part after the cursor is shaded.
class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  void setRun(const RunModel* run);
  void setCursor(qint64 t_ns);
  // -1: all stages' totals; s >= 0: stage s by category.
  void setStage(int stage);
  QCustomPlot* plot() const { return plot_; }
  // Keeps the time axis equal to the timeline's (ms since run start).
  void setTimeRange(double lower_ms, double upper_ms);

 private:
  void rebuild();
  void appendNew();
  void updateFuture();

  const RunModel* run_ = nullptr;
  QComboBox* stage_box_;
  QCustomPlot* plot_;
  QCPItemRect* future_;
  int stage_ = -1;
  std::vector<std::size_t> shown_;  // samples already plotted per stage
  qint64 cursor_ = INT64_MAX;
  qint64 origin_ = 0;
  int built_stages_ = -1;
};

}  // namespace pw::gui
