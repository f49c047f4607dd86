#pragma once
#include <memory>
#include <optional>
#include <qcustomplot.h>

#include "core/analysis/idle_attribution.h"
#include "core/analysis/predicted_timeline.h"
#include "gui/models/event_track.h"
#include "gui/models/track_lod.h"

namespace pw::gui {

class RunModel;

// Where a bar sits: used by hover, click and tests.
struct TimelineHit {
  int stage = -1;
  TrackRow row = TrackRow::Compute;
  std::size_t index = 0;
};

// The whole timeline as ONE plottable: lane per stage (stage s centred on
// value s), each lane split into a compute row and thin copy/network rows.
// Keys are milliseconds since the run's first record.
//
// Drawing cost is bounded by pixels, not events: per row the first visible
// bar is found by binary search (running max of ends), and a bar narrower
// than foldPixels() is merged with every bar starting within the next
// foldPixels(), found by another binary search, into one block whose
// opacity is the busy fraction of that span. So 1M events zoomed out
// cost O(width x rows x log n).
//
// Zoomed out further (a pixel spans several of a track's level-of-detail
// buckets, see TrackLod), a row is drawn from those buckets instead: one
// pass over ~4 buckets per pixel column, adjacent columns of the same kind
// and shade merged into one rect. No bar is visited, so a 1M-bar run costs
// what a 1k-bar one does. Folded shades are pre-blended with the
// background: opaque fills are several times cheaper to rasterise.
class TimelinePlottable : public QCPAbstractPlottable {
  Q_OBJECT
 public:
  TimelinePlottable(QCPAxis* keyAxis, QCPAxis* valueAxis);

  void setRun(const RunModel* run) { run_ = run; }
  // ns of key 0.
  void setOrigin(std::int64_t ns) { origin_ = ns; }
  std::int64_t origin() const { return origin_; }
  // Bars are drawn up to this time only (replay, freeze); INT64_MAX = all.
  void setCursor(std::int64_t ns) { cursor_ = ns; }
  std::int64_t cursor() const { return cursor_; }
  void setHighlightMicrobatch(int mb) { highlight_mb_ = mb; }
  int highlightMicrobatch() const { return highlight_mb_; }
  // Idle intervals shaded over their stages' compute rows (the Explain
  // dock's selected cause); sorted by stage, then time, as the model gives them.
  void setIdleHighlight(std::vector<IdleInterval> intervals, QColor color);
  const std::vector<IdleInterval>& idleHighlight() const { return idle_; }
  std::size_t lastDrawnIdle() const { return drawn_idle_; }
  // The simulator's timeline (the Explain dock's "Show predicted"): a
  // faded row under each stage's compute row with the predicted busy
  // actions, and the first divergence outlined on both rows and joined by a
  // line. Null: none (the lanes' rows are as without it).
  void setPredicted(std::shared_ptr<const PredictedTimeline> predicted);
  const PredictedTimeline* predicted() const { return predicted_.get(); }
  std::size_t lastDrawnPredicted() const { return drawn_predicted_; }
  // The divergence's outlines in the last draw (measured, predicted), pixels; empty when not drawn.
  const std::vector<QRectF>& lastDivergenceRects() const { return divergence_rects_; }
  // Value-axis extent of a row within stage s's lane (tests, hit testing).
  void rowExtent(int stage, TrackRow row, double& top, double& bottom) const;
  void predictedRowExtent(int stage, double& top, double& bottom) const;
  void setFoldPixels(double px) { fold_px_ = px; }
  // Benchmark baseline: scan every bar from the first and never fold.
  void setNaive(bool on) { naive_ = on; }
  // Off: never draw from the level-of-detail buckets (benchmark, tests).
  void setUseLod(bool on) { use_lod_ = on; }
  bool useLod() const { return use_lod_; }
  double foldPixels() const { return fold_px_; }

  double keyOf(std::int64_t ns) const { return static_cast<double>(ns - origin_) / 1e6; }
  std::int64_t nsOf(double key) const { return origin_ + static_cast<std::int64_t>(key * 1e6); }

  std::optional<TimelineHit> hitAt(const QPointF& pixel) const;
  // Counters of the last draw (tests, benchmark).
  std::size_t lastDrawnRects() const { return drawn_rects_; }
  std::size_t lastFoldedBlocks() const { return folded_blocks_; }
  std::size_t lastLodRows() const { return lod_rows_; }  // rows drawn from buckets

  double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;
  QCPRange getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth) const override;
  QCPRange getValueRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth,
                         const QCPRange& inKeyRange = QCPRange()) const override;

 protected:
  void draw(QCPPainter* painter) override;
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

 private:
  void drawRow(QCPPainter* p, const EventTrack& t, const TrackLod* lod, double y0, double y1, std::int64_t lo,
               std::int64_t hi);
  // True when it drew the row from the track's buckets.
  bool drawRowLod(const TrackLod* lod, double y0, double h, std::int64_t lo, std::int64_t hi);
  void flushFills(QCPPainter* p);
  void drawIdle(QCPPainter* p, std::int64_t lo, std::int64_t hi);
  void drawPredicted(QCPPainter* p, std::int64_t lo, std::int64_t hi);
  void drawDivergence(QCPPainter* p);

  // Fills are collected per (kind, opacity level) and drawn with one
  // drawRects call each: far fewer state changes than a fillRect per bar.
  static constexpr int kAlphaLevels = 8;
  std::vector<QRectF> fills_[kEventKindCount][kAlphaLevels];  // level kAlphaLevels - 1: solid
  std::vector<QRectF> highlights_;
  std::vector<std::pair<QRectF, QString>> labels_;

  const RunModel* run_ = nullptr;
  std::int64_t origin_ = 0;
  std::int64_t cursor_ = INT64_MAX;
  int highlight_mb_ = -1;
  double fold_px_ = 3.0;
  bool naive_ = false;
  bool use_lod_ = true;
  std::size_t drawn_rects_ = 0, folded_blocks_ = 0, lod_rows_ = 0, drawn_idle_ = 0;
  std::vector<IdleInterval> idle_;
  QColor idle_color_;
  std::shared_ptr<const PredictedTimeline> predicted_;
  std::vector<std::size_t> predicted_stage_begin_;  // per stage + 1: its events in predicted_->events
  std::vector<std::int64_t> predicted_longest_;     // per stage: the longest event (visible-range search)
  std::size_t drawn_predicted_ = 0;
  std::vector<QRectF> divergence_rects_;
};

}  // namespace pw::gui
