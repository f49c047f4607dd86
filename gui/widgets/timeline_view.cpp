#include "gui/widgets/timeline_view.h"

#include <QShortcut>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"
#include "gui/widgets/kind_legend.h"
#include "gui/widgets/lazy_replot.h"
#include "gui/widgets/stage_labels.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/timeline_plottable.h"

namespace pw::gui {

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->setSpacing(0);
  legend_ = new KindLegend(this);
  lay->addWidget(legend_);
  lay->addWidget(plot_, 1);
  plot_->setObjectName(QStringLiteral("timelinePlot"));
  plot_->setMinimumHeight(120);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->xAxis->setLabel(tr("time (ms)"));
  plot_->yAxis->setRangeReversed(true);
  plot_->yAxis->grid()->setVisible(false);
  plot_->yAxis->setSubTicks(false);
  plot_->yAxis->setTickLength(0, 0);
  stage_labels_ = new StageLabels(plot_->yAxis);
  bars_ = new TimelinePlottable(plot_->xAxis, plot_->yAxis);
  bars_->setName(tr("events"));

  selection_item_ = new QCPItemRect(plot_);
  selection_item_->setVisible(false);
  selection_item_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  selection_item_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  selection_item_->setPen(QPen(QColor(62, 118, 196), 1));
  selection_item_->setBrush(QColor(62, 118, 196, 50));
  selection_item_->setSelectable(false);

  cursor_line_ = new QCPItemStraightLine(plot_);
  cursor_line_->setPen(QPen(QColor(220, 60, 60), 1.5));
  cursor_line_->setVisible(false);
  cursor_line_->setSelectable(false);
  style_plot(plot_);

  connect(plot_, &QCustomPlot::mousePress, this, &TimelineView::onMousePress);
  connect(plot_, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);
  connect(plot_, &QCustomPlot::mouseRelease, this, &TimelineView::onMouseRelease);
  connect(plot_, &QCustomPlot::mouseWheel, this, [this] { user_moved_ = true; });
  connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          [this](const QCPRange& r) { emit visibleRangeChanged(r.lower, r.upper); });

  auto key = [this](const QKeySequence& k, auto fn) {
    auto* s = new QShortcut(k, this, fn);
    s->setContext(Qt::WidgetWithChildrenShortcut);
  };
  key(Qt::Key_W, [this] { zoomBy(0.7); });
  key(Qt::Key_S, [this] { zoomBy(1 / 0.7); });
  key(Qt::Key_A, [this] { panBy(-0.2); });
  key(Qt::Key_D, [this] { panBy(0.2); });
  key(Qt::Key_F, [this] { zoomToFit(); });
  key(Qt::Key_Escape, [this] { clearSelection(); });
  setFocusPolicy(Qt::StrongFocus);
}

void TimelineView::setRun(const RunModel* run) {
  if (run_) {
    disconnect(run_, nullptr, this, nullptr);
    disconnect(&run_->lod(), nullptr, this, nullptr);
  }
  run_ = run;
  bars_->setRun(run);
  legend_->setRun(run);
  fitted_ = false;
  user_moved_ = false;
  stage_ticks_ = -1;
  if (run_) {
    connect(run_, &RunModel::changed, this, &TimelineView::onRunChanged);
    // The buckets are built off the GUI thread and may trail a frame: once
    // they caught up, a view that no further tick will refresh (a finished
    // run, replay, freeze) draws again. A live view redraws on the next tick.
    connect(&run_->lod(), &LodIndex::updated, this, [this] {
      if (run_ && (run_->finished() || bars_->cursor() != INT64_MAX)) replot_when_visible(plot_);
    });
    connect(run_, &RunModel::reset, this, [this] {
      fitted_ = false;
      user_moved_ = false;
      clearSelection();
    });
  }
  onRunChanged();
}

void TimelineView::setOrigin(qint64 ns) { bars_->setOrigin(ns); }

void TimelineView::updateStageTicks() {
  int n = run_ ? run_->stageCount() : 0;
  if (n == stage_ticks_) return;
  stage_ticks_ = n;
  plot_->yAxis->setRange(-0.5, std::max(1, n) - 0.5);
  stage_labels_->setCount(n);
}

void TimelineView::onRunChanged() {
  if (!run_) return;
  updateStageTicks();
  if (!run_->isEmpty() && bars_->origin() == 0 && run_->beginNs() != 0) bars_->setOrigin(run_->beginNs());
  if (!fitted_ && !run_->isEmpty()) {
    zoomToFit();
    fitted_ = true;
    user_moved_ = false;
  } else {
    followLive();
  }
  replot_when_visible(plot_);
}

void TimelineView::followLive() {
  if (!follow_ || user_moved_ || !run_ || run_->isEmpty() || bars_->cursor() != INT64_MAX) return;
  // Live: the whole run so far stays in view until the user pans or zooms.
  QCPRange r(bars_->keyOf(run_->beginNs()), bars_->keyOf(run_->endNs()));
  plot_->xAxis->setRange(r.lower, std::max(r.upper, r.lower + 1e-3));
}

void TimelineView::setCursor(qint64 t) {
  const bool leaving = bars_->cursor() != INT64_MAX && t == INT64_MAX;
  bars_->setCursor(t);
  bool on = t != INT64_MAX;
  if (leaving) {
    // Out of freeze or replay means following again ("Ctrl+F to follow
    // again"), panned while inspecting or not, and now: a finished run has
    // no next tick to do it, a live one would lag a tick behind.
    user_moved_ = false;
    followLive();
  }
  cursor_line_->setVisible(on);
  if (on) {
    double k = bars_->keyOf(t);
    cursor_line_->point1->setCoords(k, 0);
    cursor_line_->point2->setCoords(k, 1);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

qint64 TimelineView::cursor() const { return bars_->cursor(); }

void TimelineView::zoomToFit() {
  if (!run_ || run_->isEmpty()) return;
  double lo = bars_->keyOf(run_->beginNs()), hi = bars_->keyOf(run_->endNs());
  double pad = (hi - lo) * 0.01;
  plot_->xAxis->setRange(lo - pad, std::max(hi + pad, lo + 1e-3));
  plot_->yAxis->setRange(-0.5, std::max(1, run_->stageCount()) - 0.5);
  user_moved_ = false;
  replot_when_visible(plot_);
}

void TimelineView::setVisibleRange(qint64 t0, qint64 t1) {
  plot_->xAxis->setRange(bars_->keyOf(t0), bars_->keyOf(t1));
  user_moved_ = true;
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

std::pair<qint64, qint64> TimelineView::visibleRange() const {
  return {bars_->nsOf(plot_->xAxis->range().lower), bars_->nsOf(plot_->xAxis->range().upper)};
}

void TimelineView::zoomBy(double f) {
  plot_->xAxis->scaleRange(f, plot_->xAxis->range().center());
  user_moved_ = true;
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::panBy(double fraction) {
  plot_->xAxis->moveRange(plot_->xAxis->range().size() * fraction);
  user_moved_ = true;
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::selectRange(qint64 t0, qint64 t1) {
  if (t1 < t0) std::swap(t0, t1);
  selection_range_ = std::make_pair(t0, t1);
  selection_item_->topLeft->setCoords(bars_->keyOf(t0), 0);
  selection_item_->bottomRight->setCoords(bars_->keyOf(t1), 1);
  selection_item_->setVisible(true);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  emit rangeSelected(t0, t1);
}

void TimelineView::clearSelection() {
  bool had = selection_range_.has_value();
  selection_range_.reset();
  selection_item_->setVisible(false);
  bars_->setHighlightMicrobatch(-1);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  if (had) emit selectionCleared();
}

void TimelineView::highlightIdle(std::vector<IdleInterval> intervals, const QColor& color) {
  bars_->setIdleHighlight(std::move(intervals), color);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::setPredicted(std::shared_ptr<const PredictedTimeline> predicted) {
  bars_->setPredicted(std::move(predicted));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::onMousePress(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier)) {
    selecting_ = true;
    plot_->setInteraction(QCP::iRangeDrag, false);
    select_anchor_key_ = plot_->xAxis->pixelToCoord(e->position().x());
  } else if (e->button() == Qt::LeftButton) {
    user_moved_ = true;
    if (auto hit = bars_->hitAt(e->position())) {
      Event ev = run_->track(hit->stage, hit->row).event(hit->index);
      ev.stage = hit->stage;
      bars_->setHighlightMicrobatch(ev.microbatch);
      plot_->replot(QCustomPlot::rpQueuedReplot);
      emit eventClicked(ev);
    }
  }
}

void TimelineView::onMouseMove(QMouseEvent* e) {
  if (selecting_) {
    double k = plot_->xAxis->pixelToCoord(e->position().x());
    selection_item_->topLeft->setCoords(std::min(k, select_anchor_key_), 0);
    selection_item_->bottomRight->setCoords(std::max(k, select_anchor_key_), 1);
    selection_item_->setVisible(true);
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  if (e->buttons() != Qt::NoButton || !run_) return;
  if (auto hit = bars_->hitAt(e->position()))
    QToolTip::showText(e->globalPosition().toPoint(), describe(*hit), plot_);
  else
    QToolTip::hideText();
}

void TimelineView::onMouseRelease(QMouseEvent* e) {
  if (!selecting_) return;
  selecting_ = false;
  plot_->setInteraction(QCP::iRangeDrag, true);
  double k = plot_->xAxis->pixelToCoord(e->position().x());
  if (std::abs(plot_->xAxis->coordToPixel(k) - plot_->xAxis->coordToPixel(select_anchor_key_)) < 3) {
    clearSelection();
    return;
  }
  selectRange(bars_->nsOf(std::min(k, select_anchor_key_)), bars_->nsOf(std::max(k, select_anchor_key_)));
}

QString TimelineView::describe(const TimelineHit& hit) const {
  const EventTrack& t = run_->track(hit.stage, hit.row);
  const std::size_t i = hit.index;
  QString s = QStringLiteral("<b>%1</b> on stage %2").arg(QLatin1String(to_string(t.kind(i)))).arg(hit.stage);
  if (t.microbatch(i) >= 0) s += tr("<br>microbatch %1").arg(t.microbatch(i));
  if (t.chunk(i) > 0) s += tr(", chunk %1").arg(t.chunk(i));
  if (t.first_layer(i) >= 0) s += tr("<br>layers %1-%2").arg(t.first_layer(i)).arg(t.last_layer(i));
  s += tr("<br>start %1<br>duration %2")
           .arg(format_duration_ns(static_cast<double>(t.start(i) - bars_->origin())),
                format_duration_ns(static_cast<double>(t.end(i) - t.start(i))));
  if (t.bytes(i) > 0) s += tr("<br>%1").arg(format_bytes(static_cast<double>(t.bytes(i))));
  return s;
}

}  // namespace pw::gui
