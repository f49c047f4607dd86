#pragma once
#include <QWidget>
#include <memory>
#include <optional>

#include "core/analysis/idle_attribution.h"
#include "core/analysis/predicted_timeline.h"
#include "core/events/event.h"

class QCustomPlot;
class QCPItemRect;
class QCPItemStraightLine;

namespace pw::gui {

class RunModel;
class KindLegend;
class StageLabels;
class TimelinePlottable;
struct TimelineHit;

// The run's timeline. Drag pans, the wheel zooms (time only), Shift+drag
// selects a time range (its statistics go to RangeStatsWidget), a click
// highlights a microbatch's bars on every stage, hovering shows a bar's
// details. Keys: W/S zoom, A/D pan, F fit, Esc clears the selection.
class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void setRun(const RunModel* run);
  const RunModel* run() const { return run_; }
  QCustomPlot* plot() const { return plot_; }
  TimelinePlottable* bars() const { return bars_; }
  const StageLabels* stageLabels() const { return stage_labels_; }
  KindLegend* legend() const { return legend_; }

  // Replay / freeze: draw only what happened up to t (INT64_MAX: all).
  void setCursor(qint64 t_ns);
  qint64 cursor() const;
  // Live: keep the newest data in view while nothing else moved the view.
  void setFollow(bool follow) { follow_ = follow; }
  bool follow() const { return follow_; }
  void setOrigin(qint64 ns);  // aligns two runs in Compare

  void zoomToFit();
  void setVisibleRange(qint64 t0_ns, qint64 t1_ns);
  std::pair<qint64, qint64> visibleRange() const;
  void selectRange(qint64 t0_ns, qint64 t1_ns);
  void clearSelection();
  std::optional<std::pair<qint64, qint64>> selection() const { return selection_range_; }

  // Shades idle intervals (the Explain dock's selected cause) in `color`;
  // an empty list clears them.
  void highlightIdle(std::vector<IdleInterval> intervals, const QColor& color);
  // Draws the simulator's timeline under each stage (TimelinePlottable::setPredicted); null hides it.
  void setPredicted(std::shared_ptr<const PredictedTimeline> predicted);

  // Text of the tooltip for a bar (hover).
  QString describe(const TimelineHit& hit) const;

 signals:
  void rangeSelected(qint64 t0_ns, qint64 t1_ns);
  void selectionCleared();
  void eventClicked(const pw::Event& e);
  void visibleRangeChanged(double lower_ms, double upper_ms);

 private:
  void onRunChanged();
  void followLive();  // the live range, unless the user moved the view
  void updateStageTicks();
  void onMousePress(QMouseEvent* e);
  void onMouseMove(QMouseEvent* e);
  void onMouseRelease(QMouseEvent* e);
  void zoomBy(double factor);
  void panBy(double fraction);

  const RunModel* run_ = nullptr;
  QCustomPlot* plot_;
  TimelinePlottable* bars_;
  StageLabels* stage_labels_ = nullptr;
  KindLegend* legend_ = nullptr;
  QCPItemRect* selection_item_;
  QCPItemStraightLine* cursor_line_;
  std::optional<std::pair<qint64, qint64>> selection_range_;
  bool selecting_ = false;
  double select_anchor_key_ = 0;
  bool follow_ = true;
  bool user_moved_ = false;
  bool fitted_ = false;
  int stage_ticks_ = -1;
};

}  // namespace pw::gui
