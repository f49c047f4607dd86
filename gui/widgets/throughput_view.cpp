#include "gui/widgets/throughput_view.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/run_model.h"
#include "gui/widgets/lazy_replot.h"
#include "gui/widgets/theme.h"

namespace pw::gui {

ThroughputView::ThroughputView(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  lay->addWidget(plot_);
  plot_->setObjectName(QStringLiteral("throughputPlot"));
  plot_->setMinimumHeight(100);
  plot_->xAxis->setLabel(tr("time (ms)"));
  plot_->yAxis->setLabel(tr("samples/s"));
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  future_ = new QCPItemRect(plot_);
  future_->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
  future_->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
  future_->setPen(Qt::NoPen);
  future_->setBrush(QColor(128, 128, 128, 70));
  future_->setVisible(false);
  style_plot(plot_);
}

void ThroughputView::setRun(const RunModel* run) {
  for (auto& s : runs_)
    if (s.run) disconnect(s.run, nullptr, this, nullptr);
  runs_.clear();
  if (run) addRun(run, tr("throughput"), QColor(76, 155, 232));
  refresh();
}

void ThroughputView::addRun(const RunModel* run, const QString& label, const QColor& color) {
  runs_.push_back({run, label, color});
  connect(run, &RunModel::changed, this, &ThroughputView::refresh);
  refresh();
}

void ThroughputView::setCursor(qint64 t) {
  cursor_ = t;
  refresh();
}

void ThroughputView::refresh() {
  plot_->clearGraphs();
  double xmax = 1e-3, ymax = 1;
  for (const auto& s : runs_) {
    if (!s.run) continue;
    auto* g = plot_->addGraph();
    g->setName(s.label);
    g->setPen(QPen(s.color, 2));
    QColor fill = s.color;
    fill.setAlpha(runs_.size() > 1 ? 0 : 40);
    g->setBrush(fill);
    const std::int64_t origin = s.run->beginNs();
    QVector<double> k, v;
    for (const auto& t : s.run->throughput()) {
      k.push_back((t.t_ns - origin) / 1e6);
      v.push_back(t.samples_per_s);
      ymax = std::max(ymax, t.samples_per_s);
      // A live run reports an iteration before its last events have been
      // tailed in: keep such samples in view too.
      xmax = std::max(xmax, k.back());
    }
    g->setData(k, v, true);
    xmax = std::max(xmax, (s.run->endNs() - origin) / 1e6);
  }
  plot_->xAxis->setRange(0, xmax);
  plot_->yAxis->setRange(0, ymax * 1.15);
  if (cursor_ != INT64_MAX && !runs_.empty() && runs_.front().run) {
    double k = (cursor_ - runs_.front().run->beginNs()) / 1e6;
    future_->topLeft->setCoords(k, 0);
    future_->bottomRight->setCoords(std::max(k, xmax) + 1e9, 1);
    future_->setVisible(true);
  } else {
    future_->setVisible(false);
  }
  replot_when_visible(plot_);
}

}  // namespace pw::gui
