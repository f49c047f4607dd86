#include "gui/widgets/compare_widget.h"

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/widgets/throughput_view.h"
#include "gui/widgets/timeline_view.h"

namespace pw::gui {
namespace {

double mean_throughput(const RunModel& m) {
  const auto& c = m.completions();
  if (c.size() < 2 || c.back() <= m.beginNs()) return 0;
  return c.size() * std::max(1, m.info().microbatch_size) / ((c.back() - m.beginNs()) / 1e9);
}

}  // namespace

CompareWidget::CompareWidget(const RunModel* a, QWidget* parent)
    : QWidget(parent),
      a_(a),
      b_(new RunModel(this)),
      feeder_(new RunFeeder(b_, this)),
      tp_(new ThroughputView(this)),
      ta_(new TimelineView(this)),
      tb_(new TimelineView(this)),
      summary_(new QLabel(this)) {
  setObjectName(QStringLiteral("compare"));
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  summary_->setObjectName(QStringLiteral("compareSummary"));
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(summary_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(tp_);
  split->addWidget(ta_);
  split->addWidget(tb_);
  lay->addWidget(split, 1);
  tp_->addRun(a_, tr("A"), QColor(76, 155, 232));
  tp_->addRun(b_, tr("B"), QColor(232, 163, 60));
  ta_->setRun(a_);
  tb_->setRun(b_);
  // Lock the time axes: both show ms since their own run's start.
  auto link = [this](TimelineView* from, TimelineView* to) {
    connect(from, &TimelineView::visibleRangeChanged, this, [this, to](double lo, double hi) {
      if (syncing_) return;
      syncing_ = true;
      to->plot()->xAxis->setRange(lo, hi);
      to->plot()->replot(QCustomPlot::rpQueuedReplot);
      syncing_ = false;
    });
  };
  link(ta_, tb_);
  link(tb_, ta_);
  connect(a_, &RunModel::changed, this, &CompareWidget::refresh);
  connect(b_, &RunModel::changed, this, &CompareWidget::refresh);
  refresh();
}

CompareWidget::~CompareWidget() {
  feeder_->setSource(nullptr);
  delete source_;
}

void CompareWidget::loadSecond(RunSource* source) {
  feeder_->setSource(nullptr);
  delete source_;
  source_ = source;
  source_->setParent(nullptr);
  b_->clear();
  feeder_->setSource(source_);
  source_->start();
}

QString CompareWidget::summary() const { return summary_->text(); }

void CompareWidget::refresh() {
  auto describe = [](const RunModel& m) {
    if (m.isEmpty()) return tr("(no run)");
    // Kept by the model as events arrive: a live run's tick must not scan it.
    return tr("%1: %2 samples/s, bubble %3%").arg(QString::fromStdString(m.info().name))
        .arg(mean_throughput(m), 0, 'f', 1).arg(100 * m.bubbleFraction(), 0, 'f', 1);
  };
  QString text = tr("<b>A</b> %1 &nbsp;&nbsp; <b>B</b> %2").arg(describe(*a_), describe(*b_));
  double ta = mean_throughput(*a_), tb = mean_throughput(*b_);
  if (ta > 0 && tb > 0) text += tr(" &nbsp;&nbsp; B/A throughput <b>%1x</b>").arg(tb / ta, 0, 'f', 3);
  summary_->setText(text);
}

}  // namespace pw::gui
