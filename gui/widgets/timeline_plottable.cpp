#include "gui/widgets/timeline_plottable.h"

#include <algorithm>
#include <climits>
#include <array>
#include <cmath>

#include "core/events/event_kinds.h"
#include "gui/models/run_model.h"
#include "gui/widgets/theme.h"

namespace pw::gui {

TimelinePlottable::TimelinePlottable(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPAbstractPlottable(keyAxis, valueAxis) {
  setSelectable(QCP::stNone);  // selection is a time range, handled by the view
  setAntialiasedFill(false);
}

void TimelinePlottable::rowExtent(int stage, TrackRow row, double& top, double& bottom) const {
  switch (row) {
    case TrackRow::Compute:
      // With the prediction shown, the compute row gives up its lower part to it.
      top = stage - 0.42;
      bottom = stage + (predicted_ ? -0.10 : 0.06);
      return;
    case TrackRow::Copy:
      top = stage + 0.09;
      bottom = stage + 0.19;
      return;
    case TrackRow::Network:
      top = stage + 0.21;
      bottom = stage + 0.31;
      return;
    case TrackRow::Collective:
      top = stage + 0.33;
      bottom = stage + 0.43;
      return;
  }
}

void TimelinePlottable::predictedRowExtent(int stage, double& top, double& bottom) const {
  top = stage - 0.07;
  bottom = stage + 0.06;
}

void TimelinePlottable::setPredicted(std::shared_ptr<const PredictedTimeline> predicted) {
  predicted_ = std::move(predicted);
  predicted_stage_begin_.clear();
  predicted_longest_.clear();
  divergence_rects_.clear();
  if (!predicted_) return;
  const auto& ev = predicted_->events;  // by stage, then start
  const int stages = ev.empty() ? 0 : ev.back().stage + 1;
  predicted_stage_begin_.assign(static_cast<std::size_t>(stages) + 1, ev.size());
  predicted_longest_.assign(static_cast<std::size_t>(stages), 0);
  for (std::size_t i = ev.size(); i-- > 0;) {
    if (ev[i].stage < 0) continue;
    predicted_stage_begin_[static_cast<std::size_t>(ev[i].stage)] = i;
    auto& l = predicted_longest_[static_cast<std::size_t>(ev[i].stage)];
    l = std::max(l, ev[i].end_ns - ev[i].start_ns);
  }
  // Stages without events begin where the next one does.
  for (int s = stages - 1; s >= 0; --s)
    predicted_stage_begin_[static_cast<std::size_t>(s)] =
        std::min(predicted_stage_begin_[static_cast<std::size_t>(s)], predicted_stage_begin_[static_cast<std::size_t>(s) + 1]);
}

QCPRange TimelinePlottable::getKeyRange(bool& found, QCP::SignDomain) const {
  found = run_ && !run_->isEmpty();
  if (!found) return QCPRange(0, 1);
  return QCPRange(keyOf(run_->beginNs()), std::max(keyOf(run_->endNs()), keyOf(run_->beginNs()) + 1e-6));
}

QCPRange TimelinePlottable::getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const {
  found = run_ && run_->stageCount() > 0;
  return QCPRange(-0.5, std::max(1, run_ ? run_->stageCount() : 1) - 0.5);
}

double TimelinePlottable::selectTest(const QPointF& pos, bool onlySelectable, QVariant*) const {
  if (onlySelectable) return -1;
  return hitAt(pos) ? 0 : -1;
}

std::optional<TimelineHit> TimelinePlottable::hitAt(const QPointF& px) const {
  if (!run_ || !mKeyAxis || !mValueAxis) return std::nullopt;
  double key = mKeyAxis->pixelToCoord(px.x());
  double value = mValueAxis->pixelToCoord(px.y());
  int stage = static_cast<int>(std::lround(value));
  if (stage < 0 || stage >= run_->stageCount()) return std::nullopt;
  // Bars narrower than a pixel still get hit: accept a 3 px tolerance.
  double tol_ns = std::abs(mKeyAxis->pixelToCoord(px.x() + 3) - key) * 1e6;
  std::int64_t t = nsOf(key);
  for (int r = 0; r < kTrackRowCount; ++r) {
    double top, bottom;
    rowExtent(stage, static_cast<TrackRow>(r), top, bottom);
    if (value < top || value > bottom) continue;
    const EventTrack& tr = run_->track(stage, static_cast<TrackRow>(r));
    long long i = tr.find_at(t);
    if (i < 0) {
      // The nearest bar within tolerance.
      std::size_t j = tr.first_ending_after(t - static_cast<std::int64_t>(tol_ns));
      if (j < tr.size() && tr.start(j) <= t + static_cast<std::int64_t>(tol_ns)) i = static_cast<long long>(j);
    }
    if (i >= 0 && tr.start(static_cast<std::size_t>(i)) <= cursor_)
      return TimelineHit{stage, static_cast<TrackRow>(r), static_cast<std::size_t>(i)};
  }
  return std::nullopt;
}

void TimelinePlottable::draw(QCPPainter* painter) {
  drawn_rects_ = folded_blocks_ = lod_rows_ = 0;
  if (!run_ || !mKeyAxis || !mValueAxis) return;
  painter->setAntialiasing(false);
  const QCPRange kr = mKeyAxis->range();
  std::int64_t lo = nsOf(kr.lower), hi = std::min(nsOf(kr.upper), cursor_);
  const QCPRange vr = mValueAxis->range();
  // The buckets' worker waits while this frame reads them (it adds in
  // short slices, so this waits at most one slice).
  auto lod_lock = run_->lod().lock();
  for (int s = 0; s < run_->stageCount(); ++s) {
    if (s + 0.5 < std::min(vr.lower, vr.upper) || s - 0.5 > std::max(vr.lower, vr.upper)) continue;
    for (int r = 0; r < kTrackRowCount; ++r) {
      double top, bottom;
      rowExtent(s, static_cast<TrackRow>(r), top, bottom);
      double y0 = mValueAxis->coordToPixel(top), y1 = mValueAxis->coordToPixel(bottom);
      if (y0 > y1) std::swap(y0, y1);
      drawRow(painter, run_->track(s, static_cast<TrackRow>(r)), run_->lod().lod(s, static_cast<TrackRow>(r)), y0, y1, lo, hi);
    }
  }
  lod_lock.unlock();
  flushFills(painter);
  drawPredicted(painter, lo, hi);
  drawIdle(painter, lo, hi);
  drawDivergence(painter);
  // Migrations: a marker across every lane where layers started moving.
  if (!run_->migrations().empty()) {
    QPen pen(kind_color(EventKind::Migrate), 1.5, Qt::DashLine);
    painter->setPen(pen);
    std::int64_t last = INT64_MIN;
    const QRect clip = clipRect();
    for (const auto& m : run_->migrations()) {
      if (m.start_ns == last || m.start_ns < lo || m.start_ns > hi) continue;
      last = m.start_ns;
      double x = mKeyAxis->coordToPixel(keyOf(m.start_ns));
      painter->drawLine(QLineF(x, clip.top(), x, clip.bottom()));
    }
  }
}

void TimelinePlottable::drawRow(QCPPainter*, const EventTrack& t, const TrackLod* lod, double y0, double y1,
                                std::int64_t lo, std::int64_t hi) {
  if (t.empty() || hi <= lo) return;
  const double h = y1 - y0;
  if (drawRowLod(lod, y0, h, lo, hi)) return;
  const bool labels = h >= 12;
  std::size_t i = naive_ ? 0 : t.first_ending_after(lo);
  const std::size_t n = t.size();
  const double ms_per_px = std::abs(mKeyAxis->pixelToCoord(1) - mKeyAxis->pixelToCoord(0));
  while (i < n && t.start(i) < hi) {
    if (naive_ && t.end(i) <= lo) {
      ++i;
      continue;
    }
    double x0 = mKeyAxis->coordToPixel(keyOf(std::max(t.start(i), lo)));
    double x1 = mKeyAxis->coordToPixel(keyOf(std::min(t.end(i), hi)));
    if (x1 - x0 >= fold_px_ || naive_) {
      QRectF rect(x0, y0, x1 - x0, h);
      // A 1 px gap keeps back-to-back bars apart.
      fills_[static_cast<int>(t.kind(i))][kAlphaLevels - 1].push_back(x1 - x0 > 4 ? rect.adjusted(0, 0, -1, 0) : rect);
      // Outlines and labels go on top of the fills, drawn after them.
      if (highlight_mb_ >= 0 && t.microbatch(i) == highlight_mb_) highlights_.push_back(rect.adjusted(1, 1, -1, -1));
      if (labels && x1 - x0 > 22 && t.microbatch(i) >= 0) {
        // torch.distributed.pipelining's letters: I input gradient, W weight gradients.
        const char* k = t.kind(i) == EventKind::Forward          ? "F"
                        : t.kind(i) == EventKind::Backward       ? "B"
                        : t.kind(i) == EventKind::BackwardInput  ? "I"
                        : t.kind(i) == EventKind::BackwardWeight ? "W"
                        : t.kind(i) == EventKind::Recompute      ? "R"
                                                                 : "";
        labels_.push_back({rect, QStringLiteral("%1%2").arg(QLatin1String(k)).arg(t.microbatch(i))});
      }
      ++drawn_rects_;
      ++i;
      continue;
    }
    // Fold: every bar starting before the end of this pixel span becomes one
    // block reaching the furthest end among them; its opacity is their busy
    // share of that width.
    double span_end_key = mKeyAxis->pixelToCoord(x0 + fold_px_);
    std::int64_t span_end = nsOf(std::max(span_end_key, keyOf(t.start(i)) + ms_per_px * 1e-3));
    std::size_t j = std::max(i + 1, t.first_starting_at_or_after(span_end));
    j = std::min(j, t.first_starting_at_or_after(hi));
    j = std::max(j, i + 1);
    // A wide bar that merely starts inside the span is drawn on its own.
    if (j - 1 > i && t.end(j - 1) > span_end) --j;
    std::int64_t block_end = std::min(t.max_end_through(j - 1), hi);
    std::int64_t block_start = std::max(t.start(i), lo);
    double bx1 = mKeyAxis->coordToPixel(keyOf(block_end));
    double width_ns = static_cast<double>(std::max<std::int64_t>(1, block_end - block_start));
    double busy = std::min(1.0, static_cast<double>(t.duration_sum(i, j)) / width_ns);
    int level = j - i == 1 ? kAlphaLevels - 1 : std::clamp(static_cast<int>(busy * kAlphaLevels), 0, kAlphaLevels - 1);
    fills_[static_cast<int>(t.kind(i))][level].push_back(QRectF(x0, y0, std::max(1.0, bx1 - x0), h));
    ++folded_blocks_;
    i = j;
  }
}

bool TimelinePlottable::drawRowLod(const TrackLod* lodp, double y0, double h, std::int64_t lo, std::int64_t hi) {
  if (naive_ || !use_lod_ || !lodp || lodp->levels() == 0 || mKeyAxis->scaleType() != QCPAxis::stLinear) return false;
  const TrackLod& lod = *lodp;
  // Pixels per ns along the key axis (linear), and the pixel of the
  // buckets' origin.
  const std::int64_t org = lod.origin();
  const double x_zero = mKeyAxis->coordToPixel(keyOf(org));
  const double px_per_ns = (mKeyAxis->coordToPixel(keyOf(org + 1'000'000'000)) - x_zero) / 1e9;
  if (!(px_per_ns > 0)) return false;
  const double ns_per_px = 1.0 / px_per_ns;
  // The coarsest level whose buckets are still at most a quarter pixel:
  // columns then err by under a quarter of a pixel's time.
  int level = -1;
  for (int l = lod.levels() - 1; l >= 0; --l)
    if (std::ldexp(1.0, lod.shift() + l) * 4 <= ns_per_px) {
      level = l;
      break;
    }
  if (level < 0) return false;  // zoomed in: the bars themselves
  const auto& buckets = lod.level(level);
  const int sh = lod.shift() + level;
  const std::size_t first = static_cast<std::size_t>(std::max<std::int64_t>(lo - org, 0) >> sh);
  const std::size_t last = std::min(buckets.size(), static_cast<std::size_t>(std::max<std::int64_t>(hi - org, 0) >> sh) + 1);
  const double bucket_px = std::ldexp(1.0, sh) * px_per_ns;
  const double x_first = x_zero + std::ldexp(static_cast<double>(first), sh) * px_per_ns;

  TrackLod::Bucket acc{};
  long long col = LLONG_MIN;
  int run_kind = -1, run_level = -1;
  double run_x0 = 0, run_x1 = 0;
  auto close_run = [&] {
    if (run_kind >= 0) {
      fills_[run_kind][run_level].push_back(QRectF(run_x0, y0, run_x1 - run_x0, h));
      ++folded_blocks_;
    }
    run_kind = -1;
  };
  auto close_column = [&] {
    if (col == LLONG_MIN) return;
    double busy = 0, best = 0;
    int slot = 0;
    for (int k = 0; k < TrackLod::kSlots; ++k) {
      busy += acc[k];
      if (acc[k] > best) best = acc[k], slot = k;
    }
    acc = TrackLod::Bucket{};
    const double share = busy * px_per_ns;  // busy ns over one pixel's ns
    if (share < 0.02) return close_run();
    const int kind = static_cast<int>(lod.slotKind(slot));
    const int lvl = share >= 0.95 ? kAlphaLevels - 1 : std::clamp(static_cast<int>(share * kAlphaLevels), 0, kAlphaLevels - 2);
    const double x = static_cast<double>(col);
    if (kind == run_kind && lvl == run_level && x == run_x1) {
      run_x1 = x + 1;
      return;
    }
    close_run();
    run_kind = kind;
    run_level = lvl;
    run_x0 = x;
    run_x1 = x + 1;
  };
  for (std::size_t b = first; b < last; ++b) {
    const TrackLod::Bucket& v = buckets[b];
    if (v[0] + v[1] + v[2] + v[3] == 0) continue;
    const long long c = static_cast<long long>(std::floor(x_first + static_cast<double>(b - first) * bucket_px));
    if (c != col) {
      if (col != LLONG_MIN && c != col + 1) {
        close_column();
        close_run();  // an empty column in between
      } else {
        close_column();
      }
      col = c;
    }
    for (int k = 0; k < TrackLod::kSlots; ++k) acc[k] += v[k];
  }
  close_column();
  close_run();
  ++lod_rows_;
  return true;
}

void TimelinePlottable::flushFills(QCPPainter* p) {
  p->setPen(Qt::NoPen);
  for (int k = 0; k < kEventKindCount; ++k)
    for (int a = 0; a < kAlphaLevels; ++a) {
      auto& v = fills_[k][a];
      if (v.empty()) continue;
      QColor c = kind_color(static_cast<EventKind>(k));
      // Folded blocks: the shade deepens with the busy share of their span,
      // blended with the background here so the fill is opaque.
      if (a < kAlphaLevels - 1) {
        const double al = 0.3 + 0.7 * (a + 0.5) / kAlphaLevels;
        const QColor bg = QApplication::palette().color(QPalette::Base);
        c = QColor::fromRgbF(static_cast<float>(c.redF() * al + bg.redF() * (1 - al)),
                             static_cast<float>(c.greenF() * al + bg.greenF() * (1 - al)),
                             static_cast<float>(c.blueF() * al + bg.blueF() * (1 - al)));
      }
      p->setBrush(c);
      p->drawRects(v.data(), static_cast<int>(v.size()));
      v.clear();
    }
  if (!highlights_.empty()) {
    p->setPen(QPen(QApplication::palette().color(QPalette::WindowText), 2));
    p->setBrush(Qt::NoBrush);
    p->drawRects(highlights_.data(), static_cast<int>(highlights_.size()));
    highlights_.clear();
  }
  p->setPen(Qt::black);
  for (const auto& [rect, text] : labels_) p->drawText(rect, Qt::AlignCenter, text);
  labels_.clear();
}

void TimelinePlottable::setIdleHighlight(std::vector<IdleInterval> intervals, QColor color) {
  idle_ = std::move(intervals);
  idle_color_ = color;
}

void TimelinePlottable::drawIdle(QCPPainter* p, std::int64_t lo, std::int64_t hi) {
  drawn_idle_ = 0;
  if (idle_.empty()) return;
  std::vector<QRectF> rects;
  // A stage's intervals do not overlap, so their ends are sorted too: the
  // first visible one is found by binary search.
  auto it = idle_.begin();
  while (it != idle_.end()) {
    const int stage = it->stage;
    auto stage_end = std::partition_point(it, idle_.end(), [&](const IdleInterval& i) { return i.stage == stage; });
    auto first = std::partition_point(it, stage_end, [&](const IdleInterval& i) { return i.end_ns <= lo; });
    double top, bottom;
    rowExtent(stage, TrackRow::Compute, top, bottom);
    double y0 = mValueAxis->coordToPixel(top), y1 = mValueAxis->coordToPixel(bottom);
    if (y0 > y1) std::swap(y0, y1);
    for (auto i = first; i != stage_end && i->start_ns < hi; ++i) {
      const double x0 = mKeyAxis->coordToPixel(keyOf(i->start_ns));
      const double x1 = mKeyAxis->coordToPixel(keyOf(std::min(i->end_ns, hi)));
      rects.emplace_back(QPointF(x0, y0), QPointF(std::max(x1, x0 + 1), y1));
    }
    it = stage_end;
  }
  drawn_idle_ = rects.size();
  // The cause's colour, hatched and outlined: the bars' kind colours are
  // solid, so the shading reads as "not a bar" whatever the cause.
  p->setPen(Qt::NoPen);
  p->setBrush(idle_color_);
  p->drawRects(rects.data(), static_cast<int>(rects.size()));
  p->setPen(QPen(QApplication::palette().color(QPalette::WindowText), 1.5));
  p->setBrush(QBrush(QApplication::palette().color(QPalette::WindowText), Qt::BDiagPattern));
  p->drawRects(rects.data(), static_cast<int>(rects.size()));
}

void TimelinePlottable::drawPredicted(QCPPainter* p, std::int64_t lo, std::int64_t hi) {
  drawn_predicted_ = 0;
  if (!predicted_ || hi <= lo) return;
  const auto& ev = predicted_->events;
  const QColor bg = QApplication::palette().color(QPalette::Base);
  auto faded = [&](EventKind k) {  // pre-blended with the background: opaque fills are cheap
    const QColor c = kind_color(k);
    constexpr double a = 0.5;
    return QColor::fromRgbF(static_cast<float>(c.redF() * a + bg.redF() * (1 - a)),
                            static_cast<float>(c.greenF() * a + bg.greenF() * (1 - a)),
                            static_cast<float>(c.blueF() * a + bg.blueF() * (1 - a)));
  };
  std::vector<QRectF> rects[kEventKindCount];
  const QCPRange vr = mValueAxis->range();
  for (std::size_t s = 0; s + 1 < predicted_stage_begin_.size(); ++s) {
    if (s + 0.5 < std::min(vr.lower, vr.upper) || s - 0.5 > std::max(vr.lower, vr.upper)) continue;
    double top, bottom;
    predictedRowExtent(static_cast<int>(s), top, bottom);
    double y0 = mValueAxis->coordToPixel(top), y1 = mValueAxis->coordToPixel(bottom);
    if (y0 > y1) std::swap(y0, y1);
    const auto begin = ev.begin() + static_cast<std::ptrdiff_t>(predicted_stage_begin_[s]);
    const auto end = ev.begin() + static_cast<std::ptrdiff_t>(predicted_stage_begin_[s + 1]);
    // Sorted by start; nothing ends after it starts + the stage's longest event.
    auto it = std::partition_point(begin, end, [&](const Event& e) { return e.start_ns < lo - predicted_longest_[s]; });
    // Bars under a pixel wide share their pixel column: one rect per column and kind.
    std::array<double, kEventKindCount> last_col;
    last_col.fill(-1e300);
    for (; it != end && it->start_ns < hi; ++it) {
      if (it->end_ns <= lo || !is_busy(it->kind)) continue;
      const double x0 = mKeyAxis->coordToPixel(keyOf(std::max(it->start_ns, lo)));
      const double x1 = mKeyAxis->coordToPixel(keyOf(std::min(it->end_ns, hi)));
      const int k = static_cast<int>(it->kind);
      if (x1 - x0 < 1) {
        const double col = std::floor(x0);
        if (col == last_col[static_cast<std::size_t>(k)]) continue;
        last_col[static_cast<std::size_t>(k)] = col;
        rects[k].push_back(QRectF(col, y0, 1, y1 - y0));
      } else {
        rects[k].push_back(x1 - x0 > 4 ? QRectF(x0, y0, x1 - x0 - 1, y1 - y0) : QRectF(x0, y0, x1 - x0, y1 - y0));
      }
      ++drawn_predicted_;
    }
  }
  p->setPen(Qt::NoPen);
  for (int k = 0; k < kEventKindCount; ++k) {
    if (rects[k].empty()) continue;
    p->setBrush(faded(static_cast<EventKind>(k)));
    p->drawRects(rects[k].data(), static_cast<int>(rects[k].size()));
  }
}

void TimelinePlottable::drawDivergence(QCPPainter* p) {
  divergence_rects_.clear();
  if (!predicted_ || !predicted_->mark) return;
  const DivergenceMark& m = *predicted_->mark;
  const int s = m.divergence.stage;
  double mt, mb, pt, pb;
  rowExtent(s, TrackRow::Compute, mt, mb);
  predictedRowExtent(s, pt, pb);
  auto rect = [&](std::int64_t t0, std::int64_t t1, double top, double bottom) {
    const double x0 = mKeyAxis->coordToPixel(keyOf(t0)), x1 = mKeyAxis->coordToPixel(keyOf(t1));
    const double y0 = mValueAxis->coordToPixel(top), y1 = mValueAxis->coordToPixel(bottom);
    return QRectF(QPointF(std::min(x0, x1), std::min(y0, y1)), QPointF(std::max({x0, x1, x0 + 3}), std::max(y0, y1)));
  };
  const QRectF measured = rect(m.measured_start_ns, std::min(m.measured_end_ns, cursor_), mt, mb);
  const QRectF predicted = rect(m.predicted_start_ns, m.predicted_end_ns, pt, pb);
  if (m.measured_start_ns > cursor_) return;  // not reached yet in replay
  divergence_rects_ = {measured, predicted};
  const QColor red(220, 30, 30);
  p->setPen(QPen(red, 2));
  p->setBrush(Qt::NoBrush);
  p->drawRect(measured);
  p->drawRect(predicted);
  // Measured start to predicted start: how far the run is off the prediction.
  p->drawLine(QPointF(measured.left(), measured.bottom()), QPointF(predicted.left(), predicted.top()));
  const double shift_ms = static_cast<double>(m.divergence.measured_offset_ns - m.divergence.predicted_offset_ns) / 1e6;
  p->setPen(red);
  QFont f = p->font();
  f.setBold(true);
  p->setFont(f);
  p->drawText(QPointF(std::max(measured.right(), predicted.right()) + 4, measured.top() + QFontMetricsF(f).ascent()),
              QStringLiteral("first divergence: %1%2 ms").arg(shift_ms >= 0 ? "+" : "").arg(shift_ms, 0, 'f', 2));
}

void TimelinePlottable::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const {
  painter->fillRect(rect, kind_color(EventKind::Forward));
}

}  // namespace pw::gui
