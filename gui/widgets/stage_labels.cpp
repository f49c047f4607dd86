#include "gui/widgets/stage_labels.h"

#include <QFontMetricsF>
#include <cmath>
#include <qcustomplot.h>

namespace pw::gui {
namespace {

// 1, 2, 4, 5, 8, 10, 16, 20, 32, 40, 50, 64, ...: round numbers a reader can
// count along (multiples of the step land on 0, 10, 20 or 0, 8, 16).
// At most `stages` (only stage 0 labelled): an axis not laid out yet has
// no pixels to share.
int nice_step(double minimum, int stages) {
  static const int steps[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 100, 128, 200, 256, 500, 1000};
  const int most = std::max(1, stages);
  for (int s : steps)
    if (s >= minimum) return std::min(s, most);
  return most;
}

QString label(int stage, bool long_labels) {
  return long_labels ? QObject::tr("stage %1").arg(stage) : QString::number(stage);
}

}  // namespace

StageLabels::StageLabels(QCPAxis* axis) : QObject(axis), axis_(axis) {
  connect(axis->parentPlot(), &QCustomPlot::beforeReplot, this, &StageLabels::relayout);
}

void StageLabels::setCount(int stages) {
  if (stages == count_) return;
  count_ = stages;
  extent_ = -1;  // relabel
  relayout();
}

void StageLabels::relayout() {
  const bool horizontal = axis_->orientation() == Qt::Horizontal;
  const QRect r = axis_->axisRect()->rect();
  const double extent = horizontal ? r.width() : r.height();
  const QCPRange range = axis_->range();
  // Pixels between neighbouring stages at the axis' current range.
  const double per_stage = range.size() > 0 ? extent / range.size() : extent;
  if (per_stage == extent_ && step_ > 0) return;
  extent_ = per_stage;
  const QFontMetricsF fm(axis_->tickLabelFont());
  const int last = std::max(0, count_ - 1);
  auto size_of = [&](const QString& t) { return horizontal ? fm.horizontalAdvance(t) : fm.height(); };
  long_ = size_of(label(last, true)) + kGapPx <= per_stage;
  step_ = long_ ? 1 : nice_step((size_of(label(last, false)) + kGapPx) / std::max(per_stage, 1e-9), count_);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int s = 0; s < count_; s += step_) ticker->addTick(s, label(s, long_));
  axis_->setTicker(ticker);
  axis_->setLabel(long_ || count_ == 0 ? QString() : tr("stage"));
}

std::vector<StageLabels::Placed> StageLabels::placed() const {
  std::vector<Placed> out;
  const bool horizontal = axis_->orientation() == Qt::Horizontal;
  const QFontMetricsF fm(axis_->tickLabelFont());
  if (step_ <= 0) return out;
  for (int s = 0; s < count_; s += step_) {
    const QString t = label(s, long_);
    out.push_back({s, t, axis_->coordToPixel(s), horizontal ? fm.horizontalAdvance(t) : fm.height()});
  }
  return out;
}

}  // namespace pw::gui
