#include "gui/widgets/throughput_view.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/run_model.h"
#include "gui/widgets/lazy_replot.h"
#include "gui/widgets/theme.h"

namespace pw::gui {
namespace {

// The last sample in words: "44.1 samples/s over an iteration of 5803.0 ms".
QString describe_latest(const std::vector<ThroughputSample>& samples) {
  if (samples.empty()) return {};
  const ThroughputSample& t = samples.back();
  QString s = QObject::tr("%1 samples/s").arg(t.samples_per_s, 0, 'f', t.samples_per_s < 100 ? 1 : 0);
  if (t.iteration_ms > 0) s += QObject::tr(" over an iteration of %1 ms").arg(t.iteration_ms, 0, 'f', 1);
  return s;
}

}  // namespace

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
  // The figure in words, top left: what the line says, also when it is flat.
  figure_ = new QCPItemText(plot_);
  figure_->setObjectName(QStringLiteral("throughputFigure"));
  figure_->position->setType(QCPItemPosition::ptAxisRectRatio);
  figure_->position->setCoords(0.01, 0.02);
  figure_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  figure_->setTextAlignment(Qt::AlignLeft);
  figure_->setClipToAxisRect(true);
  style_plot(plot_);
  figure_->setColor(plot_->xAxis->labelColor());
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
  QString latest;
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
      const double end = (t.t_ns - origin) / 1e6;
      // A sample that names its iteration's length holds over that
      // iteration: drawn as a level from its start to its end, so a run of
      // one iteration (every simulation) shows its figure, not a lone point.
      if (t.iteration_ms > 0) {
        k.push_back(std::max(0.0, end - t.iteration_ms));
        v.push_back(t.samples_per_s);
      }
      k.push_back(end);
      v.push_back(t.samples_per_s);
      ymax = std::max(ymax, t.samples_per_s);
      // A live run reports an iteration before its last events have been
      // tailed in: keep such samples in view too.
      xmax = std::max(xmax, end);
    }
    if (&s == &runs_.front()) latest = describe_latest(s.run->throughput());
    g->setData(k, v, true);
    xmax = std::max(xmax, (s.run->endNs() - origin) / 1e6);
  }
  plot_->xAxis->setRange(0, xmax);
  plot_->yAxis->setRange(0, ymax * 1.15);
  figure_->setColor(plot_->xAxis->labelColor());  // follows the theme
  figure_->setText(latest.isEmpty() ? tr("no throughput yet: no iteration has completed") : latest);
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
