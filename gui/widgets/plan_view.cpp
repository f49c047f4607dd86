#include "gui/widgets/plan_view.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "gui/models/run_model.h"
#include "gui/widgets/theme.h"

namespace pw::gui {
namespace {
constexpr int kLabelWidth = 110;
constexpr int kRowHeight = 46;
constexpr int kBarHeight = 22;
constexpr int kLegendHeight = 20;
}  // namespace

PlanView::PlanView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setObjectName(QStringLiteral("planView"));
}

QSize PlanView::sizeHint() const { return {600, kLegendHeight + kRowHeight * std::max<int>(1, static_cast<int>(rows_.size())) + 8}; }
QSize PlanView::minimumSizeHint() const { return {300, kLegendHeight + kRowHeight + 8}; }

void PlanView::setRows(std::vector<Row> rows) {
  rows_ = std::move(rows);
  updateGeometry();
  update();
}

void PlanView::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_) connect(run_, &RunModel::changed, this, &PlanView::syncFromRun);
  syncFromRun();
}

void PlanView::setCursor(qint64 t) {
  cursor_ = t;
  syncFromRun();
}

void PlanView::syncFromRun() {
  if (!run_) return;
  std::vector<Row> rows;
  const PlanVersion* now = run_->planAt(cursor_ == INT64_MAX ? run_->endNs() : cursor_);
  if (now) {
    rows.push_back({tr("plan %1 (now)").arg(now->version), now->plan,
                    QString::fromStdString(now->plan.planner) +
                        (now->reason.empty() ? QString() : QStringLiteral(": ") + QString::fromStdString(now->reason))});
    const PlanVersion* before = run_->planAt(now->t_ns - 1);
    if (before && before != now)
      rows.push_back({tr("plan %1 (before)").arg(before->version), before->plan, QString::fromStdString(before->plan.planner)});
  }
  setRows(std::move(rows));
}

QRectF PlanView::barRect(int row) const {
  return QRectF(kLabelWidth, kLegendHeight + row * kRowHeight + 4, std::max(50, width() - kLabelWidth - 8), kBarHeight);
}

void PlanView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  p.setPen(pal.color(QPalette::WindowText));
  // Legend.
  int x = 6;
  for (MemoryPolicy pol : {MemoryPolicy::Keep, MemoryPolicy::Recompute, MemoryPolicy::Swap, MemoryPolicy::Selective}) {
    p.fillRect(QRect(x, 5, 10, 10), policy_color(pol));
    p.drawText(QRect(x + 14, 0, 90, kLegendHeight), Qt::AlignVCenter, QString::fromLatin1(to_string(pol)));
    x += 100;
  }
  if (rows_.empty()) {
    p.drawText(rect().adjusted(0, kLegendHeight, 0, 0), Qt::AlignCenter, tr("no plan yet"));
    return;
  }
  const QFont small = labelFont();
  for (int r = 0; r < static_cast<int>(rows_.size()); ++r) {
    const Row& row = rows_[r];
    const QRectF bar = barRect(r);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRectF(4, bar.top(), kLabelWidth - 8, bar.height()), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(row.label, Qt::ElideRight, kLabelWidth - 8));
    const int layers = row.plan.layer_count();
    if (layers == 0) {
      // No plan (the planner failed or refused the job): say why where the
      // bar would be, instead of leaving the row blank.
      p.setFont(small);
      p.drawText(bar, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
                 row.note.isEmpty() ? tr("no plan") : tr("no plan: %1").arg(row.note));
      p.setFont(font());
      continue;
    }
    const double w = bar.width() / layers;
    for (int l = 0; l < layers; ++l) {
      QRectF cell(bar.left() + l * w, bar.top(), w, bar.height());
      p.fillRect(cell.adjusted(0, 0, w > 3 ? -1 : 0, 0), policy_color(row.plan.policy[l]));
    }
    p.setFont(small);
    for (int s = 0; s < static_cast<int>(row.plan.stages.size()); ++s) {
      const auto& st = row.plan.stages[s];
      QRectF seg(bar.left() + st.first_layer * w, bar.top() - 3, st.size() * w, bar.height() + 6);
      p.setPen(QPen(pal.color(QPalette::WindowText), 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(seg);
      p.fillRect(QRectF(seg.left(), seg.top(), seg.width(), 3), stage_color(s));
    }
    p.setPen(Qt::black);
    for (const StageLabel& l : stageLabels(r)) p.drawText(l.rect, Qt::AlignCenter, l.text);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRectF(bar.left(), bar.bottom() + 3, bar.width(), kRowHeight - kBarHeight - 6),
               Qt::AlignLeft | Qt::AlignTop, row.note);
    p.setFont(font());
  }
}

QFont PlanView::labelFont() const {
  QFont small = font();
  small.setPointSizeF(std::max(6.0, font().pointSizeF() - 1));
  return small;
}

std::vector<PlanView::StageLabel> PlanView::stageLabels(int row) const {
  std::vector<StageLabel> out;
  if (row < 0 || row >= static_cast<int>(rows_.size())) return out;
  const Plan& plan = rows_[static_cast<std::size_t>(row)].plan;
  const int layers = plan.layer_count();
  if (layers == 0) return out;
  const QRectF bar = barRect(row);
  const double w = bar.width() / layers;
  const QFontMetricsF fm(labelFont());
  // One form for the whole row, the longest every stage's box holds with
  // room to spare ("S3 12-15", "S3", "3"); where even the number does not
  // fit (64 stages on a narrow bar), the number centred on its stage where
  // it keeps clear of the label before, so every few stages are numbered
  // and the tooltip names the rest.
  const auto text_of = [&](int form, int s) {
    const auto& st = plan.stages[static_cast<std::size_t>(s)];
    return form == 0 ? QStringLiteral("S%1 %2-%3").arg(s).arg(st.first_layer).arg(st.last_layer)
           : form == 1 ? QStringLiteral("S%1").arg(s)
                       : QString::number(s);
  };
  const auto seg_of = [&](int s) {
    const auto& st = plan.stages[static_cast<std::size_t>(s)];
    return QRectF(bar.left() + st.first_layer * w, bar.top(), st.size() * w, bar.height());
  };
  const int stages = static_cast<int>(plan.stages.size());
  int form = 0;
  for (; form < 2; ++form) {
    bool all = true;
    for (int s = 0; s < stages && all; ++s) all = fm.horizontalAdvance(text_of(form, s)) + 2 * kLabelPadPx <= seg_of(s).width();
    if (all) break;
  }
  for (int s = 0; s < stages; ++s) {
    const QRectF seg = seg_of(s);
    const QString text = text_of(form, s);
    const double tw = fm.horizontalAdvance(text);
    const QRectF box(seg.center().x() - tw / 2, seg.center().y() - fm.height() / 2, tw, fm.height());
    const bool clear = out.empty() || out.back().rect.right() + 2 * kLabelPadPx <= box.left();
    if (clear && box.left() >= bar.left() && box.right() <= bar.right()) out.push_back({s, text, box});
  }
  return out;
}

bool PlanView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    for (int r = 0; r < static_cast<int>(rows_.size()); ++r) {
      QRectF bar = barRect(r);
      const Plan& plan = rows_[r].plan;
      if (!bar.contains(he->pos()) || plan.layer_count() == 0) continue;
      int l = std::clamp(static_cast<int>((he->pos().x() - bar.left()) / (bar.width() / plan.layer_count())), 0,
                         plan.layer_count() - 1);
      QString name = l < static_cast<int>(names_.size()) ? QString::fromStdString(names_[l]) : QString();
      QString tip = tr("layer %1 %2<br>stage %3, %4").arg(l).arg(name).arg(plan.stage_of(l)).arg(QLatin1String(to_string(plan.policy[l])));
      if (plan.stage_of(l) >= 0 && plan.stage_of(l) < static_cast<int>(plan.predicted.size())) {
        const auto& pr = plan.predicted[plan.stage_of(l)];
        tip += tr("<br>stage time %1 ms/microbatch, peak %2 GiB of %3")
                   .arg(pr.time_ms, 0, 'f', 2)
                   .arg(pr.peak_memory_bytes / 1073741824.0, 0, 'f', 2)
                   .arg(pr.memory_budget_bytes / 1073741824.0, 0, 'f', 1);
      }
      QToolTip::showText(he->globalPos(), tip, this);
      return true;
    }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace pw::gui
