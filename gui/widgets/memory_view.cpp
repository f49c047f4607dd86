#include "gui/widgets/memory_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/run_model.h"
#include "gui/widgets/lazy_replot.h"
#include "gui/widgets/theme.h"

namespace pw::gui {
namespace {
constexpr double GiB = 1024.0 * 1024 * 1024;
}

MemoryView::MemoryView(QWidget* parent) : QWidget(parent), stage_box_(new QComboBox(this)), plot_(new QCustomPlot(this)) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Show:"), this));
  stage_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(stage_box_);
  bar->addStretch(1);
  lay->addLayout(bar);
  lay->addWidget(plot_, 1);
  plot_->setObjectName(QStringLiteral("memoryPlot"));
  plot_->setMinimumHeight(100);
  plot_->xAxis->setLabel(tr("time (ms)"));
  plot_->yAxis->setLabel(tr("GiB"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 7));
  // The legend in a row of its own above the axis rect, left-aligned (a
  // spacer takes the rest of the row): inside the axis rect it covered the
  // lines whatever headroom the value axis left.
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->axisRect()->insetLayout()->simplify();
  auto* legend_row = new QCPLayoutGrid;
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, legend_row);
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  legend_row->setMargins(QMargins(0, 0, 0, 0));
  legend_row->addElement(0, 0, plot_->legend);
  legend_row->addElement(0, 1, new QCPLayoutElement(plot_));
  legend_row->setColumnStretchFactor(0, 0.001);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);  // compact rows
  plot_->legend->setWrap(5);
  plot_->legend->setMargins(QMargins(4, 1, 4, 1));  // its row takes height from a short dock's plot
  plot_->legend->setRowSpacing(0);
  plot_->legend->setColumnSpacing(4);
  plot_->legend->setIconSize(14, 8);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  future_ = new QCPItemRect(plot_);
  future_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  future_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  future_->setPen(Qt::NoPen);
  future_->setBrush(QColor(128, 128, 128, 70));
  future_->setVisible(false);
  style_plot(plot_);
  connect(stage_box_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { setStage(stage_box_->itemData(i).toInt()); });
}

void MemoryView::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_) {
    connect(run_, &RunModel::changed, this, &MemoryView::appendNew);
    connect(run_, &RunModel::reset, this, &MemoryView::rebuild);
  }
  rebuild();
}

void MemoryView::setStage(int stage) {
  if (stage == stage_ && built_stages_ >= 0) return;
  stage_ = stage;
  rebuild();
}

void MemoryView::rebuild() {
  plot_->clearGraphs();
  shown_.clear();
  built_stages_ = run_ ? run_->stageCount() : 0;
  {
    QSignalBlocker block(stage_box_);
    stage_box_->clear();
    stage_box_->addItem(tr("All stages (total)"), -1);
    for (int s = 0; s < built_stages_; ++s) stage_box_->addItem(tr("Stage %1 by category").arg(s), s);
    if (stage_ >= built_stages_) stage_ = -1;
    stage_box_->setCurrentIndex(stage_ + 1);
  }
  if (!run_ || built_stages_ == 0) {
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  origin_ = run_->beginNs();
  if (stage_ < 0) {
    for (int s = 0; s < built_stages_; ++s) {
      auto* g = plot_->addGraph();
      g->setName(tr("stage %1").arg(s));
      g->setPen(QPen(stage_color(s), 1.5));
      g->setLineStyle(QCPGraph::lsStepLeft);
    }
  } else {
    // Stacked: graph k draws the sum of categories 0..k, filled down to
    // graph k-1.
    for (int c = 0; c < kMemoryCategoryCount; ++c) {
      auto* g = plot_->addGraph();
      g->setName(QString::fromLatin1(memory_category_name(c)));
      QColor col = memory_category_color(c);
      g->setPen(QPen(col.darker(120), 1));
      col.setAlpha(150);
      g->setBrush(col);
      g->setLineStyle(QCPGraph::lsStepLeft);
      if (c > 0) g->setChannelFillGraph(plot_->graph(c - 1));
    }
  }
  // Budget: one dashed line per distinct budget.
  std::int64_t budget = 0;
  for (int s = 0; s < built_stages_; ++s) budget = std::max(budget, run_->memoryBudget(s));
  if (budget > 0) {
    auto* g = plot_->addGraph();
    g->setName(tr("budget"));
    g->setPen(QPen(QColor(220, 60, 60), 1.5, Qt::DashLine));
    g->setProperty("budget", static_cast<qlonglong>(budget));
  }
  shown_.assign(built_stages_, 0);
  appendNew();  // sets the axes
}

void MemoryView::appendNew() {
  if (!run_) return;
  if (run_->stageCount() != built_stages_) return rebuild();
  bool added = false;
  for (int s = 0; s < built_stages_; ++s) {
    if (stage_ >= 0 && s != stage_) continue;
    const auto& v = run_->memory(s);
    std::size_t from = shown_[s];
    if (from >= v.size()) continue;
    added = true;
    const std::size_t n = v.size() - from;
    if (stage_ < 0) {
      QVector<double> keys(n), vals(n);
      for (std::size_t i = 0; i < n; ++i) {
        keys[i] = (v[from + i].t_ns - origin_) / 1e6;
        vals[i] = v[from + i].bytes / GiB;
      }
      plot_->graph(s)->addData(keys, vals, true);
    } else {
      QVector<double> keys(n);
      std::array<QVector<double>, kMemoryCategoryCount> vals;
      for (auto& x : vals) x.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto& m = v[from + i];
        keys[i] = (m.t_ns - origin_) / 1e6;
        auto cats = memory_categories(m);
        if (!has_memory_breakdown(m)) cats = {0, 0, 0, m.bytes, 0, 0};
        double sum = 0;
        for (int c = 0; c < kMemoryCategoryCount; ++c) vals[c][i] = (sum += cats[c] / GiB);
      }
      for (int c = 0; c < kMemoryCategoryCount; ++c) plot_->graph(c)->addData(keys, vals[c], true);
    }
    shown_[s] = v.size();
  }
  // The budget line spans the data.
  for (int g = 0; g < plot_->graphCount(); ++g) {
    auto* gr = plot_->graph(g);
    if (!gr->property("budget").isValid()) continue;
    double b = gr->property("budget").toLongLong() / GiB;
    double hi = std::max(1e-3, (run_->endNs() - origin_) / 1e6);
    gr->setData({0, hi}, {b, b}, true);
  }
  if (added) {
    double top = 0, budget = 0;
    for (int g = 0; g < plot_->graphCount(); ++g) {
      bool f = false;
      QCPRange r = plot_->graph(g)->getValueRange(f);
      if (!f) continue;
      if (plot_->graph(g)->property("budget").isValid())
        budget = r.upper;
      else
        top = std::max(top, r.upper);
    }
    // A budget far above the data would flatten it: then the budget is
    // named on the axis instead of drawn.
    bool budget_in_view = budget > 0 && budget <= 3 * top;
    for (int g = 0; g < plot_->graphCount(); ++g)
      if (plot_->graph(g)->property("budget").isValid())
        plot_->graph(g)->setName(budget_in_view ? tr("budget") : tr("budget %1 GiB (off scale)").arg(budget, 0, 'f', 1));
    plot_->yAxis->setRange(0, std::max(budget_in_view ? budget : 0.0, top) * 1.1 + 1e-9);
    if (!property("userX").toBool()) plot_->xAxis->setRange(0, std::max(1e-3, (run_->endNs() - origin_) / 1e6));
  }
  updateFuture();
  replot_when_visible(plot_);
}

void MemoryView::setTimeRange(double lo, double hi) {
  plot_->xAxis->setRange(lo, hi);
  setProperty("userX", true);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryView::setCursor(qint64 t) {
  cursor_ = t;
  updateFuture();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryView::updateFuture() {
  if (!run_ || cursor_ == INT64_MAX) {
    future_->setVisible(false);
    return;
  }
  future_->setVisible(true);
  future_->topLeft->setCoords((cursor_ - origin_) / 1e6, 0);
  future_->bottomRight->setCoords(std::max((run_->endNs() - origin_) / 1e6, (cursor_ - origin_) / 1e6) + 1e9, 1);
}

}  // namespace pw::gui
