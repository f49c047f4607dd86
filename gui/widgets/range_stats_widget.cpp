#include "gui/widgets/range_stats_widget.h"

#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QStyle>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"
#include "gui/widgets/theme.h"

namespace pw::gui {
namespace {
// Columns after stage and busy: the kinds worth a column of their own.
const EventKind kKindColumns[] = {EventKind::Forward,       EventKind::Backward,      EventKind::BackwardInput,
                                  EventKind::BackwardWeight, EventKind::Recompute,     EventKind::SwapOut,
                                  EventKind::SwapIn,         EventKind::Send,          EventKind::OptimizerStep,
                                  EventKind::AllReduce,     EventKind::TensorAllReduce};
// Past this the dock would crowd the timeline out: the table scrolls instead
// (every kind at once: recompute, swaps, sends and the optimizer).
constexpr int kMaxFitWidth = 560;
}

RangeStatsWidget::RangeStatsWidget(QWidget* parent)
    : QWidget(parent), summary_(new QLabel(this)), table_(new QTableWidget(this)) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(4, 4, 4, 4);
  summary_->setObjectName(QStringLiteral("rangeSummary"));
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  lay->addWidget(summary_);
  lay->addWidget(table_, 1);
  table_->setObjectName(QStringLiteral("rangeTable"));
  QStringList headers{tr("Stage"), tr("Busy")};
  for (EventKind k : kKindColumns) headers << QString::fromLatin1(to_string(k));
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  for (int c = 0; c < static_cast<int>(std::size(kKindColumns)); ++c) {
    QPixmap px(10, 10);
    px.fill(kind_color(kKindColumns[c]));
    table_->horizontalHeaderItem(c + 2)->setIcon(QIcon(px));
  }
  clear();
}

void RangeStatsWidget::clear() {
  stats_ = RangeStats();
  summary_->setText(tr("Shift+drag on the timeline to select a time range."));
  table_->setRowCount(0);
  for (int c = 0; c < static_cast<int>(std::size(kKindColumns)); ++c) table_->setColumnHidden(c + 2, true);
  fitColumns();
}

void RangeStatsWidget::fitColumns() {
  // The dock is as wide as the columns shown (they size to their contents),
  // so none is cut off at the default width.
  table_->horizontalHeader()->resizeSections(QHeaderView::ResizeToContents);
  const int scroll = style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, table_);
  const auto m = layout()->contentsMargins();
  const int need = table_->horizontalHeader()->length() + 2 * table_->frameWidth() + scroll + m.left() + m.right();
  setMinimumWidth(std::min(need, kMaxFitWidth));
}

QString RangeStatsWidget::summaryText() const { return summary_->text(); }

void RangeStatsWidget::showRange(qint64 t0, qint64 t1) {
  if (!run_) return;
  stats_ = range_stats(*run_, t0, t1);
  const double width = static_cast<double>(stats_.t1 - stats_.t0);
  summary_->setText(tr("<b>%1</b> from %2 &nbsp; busy <b>%3%</b> &nbsp; bubble <b>%4%</b> &nbsp; %5 microbatches done")
                        .arg(format_duration_ns(width), format_duration_ns(static_cast<double>(stats_.t0 - run_->beginNs())))
                        .arg(100 * stats_.busy_fraction, 0, 'f', 1)
                        .arg(100 * stats_.bubble_fraction, 0, 'f', 1)
                        .arg(stats_.microbatches_completed));
  table_->setRowCount(static_cast<int>(stats_.stages.size()) + 1);
  auto cell = [&](int r, int c, const QString& text) {
    auto* it = new QTableWidgetItem(text);
    it->setTextAlignment(c == 0 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(r, c, it);
  };
  for (int s = 0; s < static_cast<int>(stats_.stages.size()); ++s) {
    const auto& st = stats_.stages[s];
    cell(s, 0, tr("stage %1").arg(s));
    cell(s, 1, QStringLiteral("%1%").arg(100 * st.busy_fraction, 0, 'f', 1));
    for (int c = 0; c < static_cast<int>(std::size(kKindColumns)); ++c)
      cell(s, c + 2, format_duration_ns(static_cast<double>(st.kind_ns[static_cast<int>(kKindColumns[c])])));
  }
  int total = static_cast<int>(stats_.stages.size());
  cell(total, 0, tr("all"));
  cell(total, 1, QStringLiteral("%1%").arg(100 * stats_.busy_fraction, 0, 'f', 1));
  for (int c = 0; c < static_cast<int>(std::size(kKindColumns)); ++c) {
    const std::int64_t ns = stats_.kind_ns[static_cast<int>(kKindColumns[c])];
    cell(total, c + 2, format_duration_ns(static_cast<double>(ns)));
    table_->setColumnHidden(c + 2, ns == 0);  // a column of "0 ns" says nothing and costs width
  }
  fitColumns();
}

}  // namespace pw::gui
