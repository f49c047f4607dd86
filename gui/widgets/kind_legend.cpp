#include "gui/widgets/kind_legend.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPixmap>

#include "core/events/event_kinds.h"
#include "gui/models/run_model.h"
#include "gui/widgets/theme.h"

namespace pw::gui {
namespace {

const char* lane_name(EventLane l) {
  switch (l) {
    case EventLane::Compute: return "compute";
    case EventLane::Copy: return "copy";
    case EventLane::Link: return "link";
    case EventLane::Collective: return "collective";
  }
  return "";
}

QPixmap swatch(const QColor& c, int size) {
  QPixmap p(size, size);
  p.fill(Qt::transparent);
  QPainter painter(&p);
  painter.fillRect(QRect(0, 0, size, size), c);
  painter.setPen(c.darker(140));
  painter.drawRect(QRect(0, 0, size - 1, size - 1));
  return p;
}

}  // namespace

std::vector<EventKind> KindLegend::drawable_kinds() {
  std::vector<EventKind> out;
  for (int lane = 0; lane < kEventLaneCount; ++lane)
    for (int k = 0; k < kEventKindCount; ++k) {
      const auto kind = static_cast<EventKind>(k);
      if (kind != EventKind::Idle && static_cast<int>(lane_of(kind)) == lane) out.push_back(kind);
    }
  return out;
}

KindLegend::KindLegend(QWidget* parent) : QWidget(parent), lay_(new QHBoxLayout(this)) {
  setObjectName(QStringLiteral("kindLegend"));
  lay_->setContentsMargins(4, 1, 4, 1);
  lay_->setSpacing(10);
  refresh();
}

void KindLegend::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_) connect(run_, &RunModel::changed, this, &KindLegend::refresh);
  refresh();
}

void KindLegend::refresh() {
  const std::uint32_t mask = run_ ? run_->kindsSeen() : 0;
  if (mask == shown_mask_) return;  // a live run's tick: nothing new to list
  shown_mask_ = mask;
  while (QLayoutItem* item = lay_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  shown_.clear();
  const int size = fontMetrics().height() - 4;
  int lane = -1;
  for (EventKind k : drawable_kinds()) {
    if (!(mask & (1u << static_cast<int>(k)))) continue;
    if (static_cast<int>(lane_of(k)) != lane) {
      lane = static_cast<int>(lane_of(k));
      auto* caption = new QLabel(tr("%1:").arg(QLatin1String(lane_name(lane_of(k)))), this);
      caption->setEnabled(false);  // the palette's muted text: a heading, not an entry
      lay_->addWidget(caption);
    }
    auto* item = new QWidget(this);
    item->setObjectName(QStringLiteral("legend.") + QLatin1String(to_string(k)));
    auto* h = new QHBoxLayout(item);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(3);
    auto* sw = new QLabel(item);
    sw->setObjectName(QStringLiteral("swatch"));
    sw->setPixmap(swatch(kind_color(k), std::max(8, size)));
    h->addWidget(sw);
    h->addWidget(new QLabel(QString::fromLatin1(to_string(k)), item));
    lay_->addWidget(item);
    shown_.push_back(k);
  }
  lay_->addStretch(1);
  setVisible(!shown_.empty());
}

}  // namespace pw::gui
