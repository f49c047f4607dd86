#pragma once
#include <QWidget>

#include "gui/models/range_stats.h"

class QLabel;
class QTableWidget;

namespace pw::gui {

class RunModel;

// Statistics of the time range selected on the timeline: busy share and
// bubble over all stages, microbatches completed, and per stage the busy
// share and time per event kind (the kinds the range has: a column of
// zeros is hidden); the widget is at least as wide as its columns.
class RangeStatsWidget : public QWidget {
  Q_OBJECT
 public:
  explicit RangeStatsWidget(QWidget* parent = nullptr);
  void setRun(const RunModel* run) { run_ = run; }
  void showRange(qint64 t0_ns, qint64 t1_ns);
  void clear();
  const RangeStats& stats() const { return stats_; }
  QString summaryText() const;

 private:
  void fitColumns();
  const RunModel* run_ = nullptr;
  RangeStats stats_;
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace pw::gui
