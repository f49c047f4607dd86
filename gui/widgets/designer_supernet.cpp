// The designer's prediction for a supernet job: the supernet simulator's
// figures under the job's mode and every other mode (the planners do not
// plan supernets), the partition of its choice layers, the candidates'
// peak residency against the per-stage budget, and the first subnets on
// the timeline.
#include <QLabel>
#include <QTabWidget>
#include <qcustomplot.h>

#include "gui/models/job_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"
#include "gui/models/supernet_comparison_model.h"
#include "gui/widgets/designer_widget.h"
#include "gui/widgets/plan_view.h"

namespace pw::gui {

void DesignerWidget::applySupernetPrediction(const SupernetPrediction& s) {
  SupernetPrediction figures = s;
  figures.events.clear();  // the timeline's, up to 200k; the table needs the figures only
  supernet_comparison_->setPrediction(std::move(figures));
  showComparison(true);
  layers_->setRows({}, QString());
  layer_source_->setText(tr("A supernet: its choice layers are the search space's."));
  memory_plot_->clearPlottables();
  memory_plot_->clearItems();
  predicted_run_->clear();
  if (!s.error.empty()) {
    summary_->setText(QStringLiteral("<span style='color:#d9534f'>%1</span>").arg(QString::fromStdString(s.error).toHtmlEscaped()));
    plan_view_->setRows({});
    memory_plot_->replot(QCustomPlot::rpQueuedReplot);
    emit predictionUpdated();
    return;
  }
  Plan partition;
  for (const auto& st : s.stages) partition.stages.push_back({st.first, st.last});
  partition.policy.assign(s.layer_names.size(), MemoryPolicy::Keep);
  std::vector<PlanView::Row> rows;
  QStringList baselines;
  for (const auto& o : s.outcomes) {
    const QString mode = QString::fromStdString(o.mode);
    if (!o.ok) {
      rows.push_back({mode, Plan(), QString::fromStdString(o.error)});
      continue;
    }
    const auto& r = o.result;
    QString note = tr("%1 subnets/s, utilisation %2%, candidates resident %3%")
                       .arg(r.subnets_per_s, 0, 'f', 2)
                       .arg(100 * r.utilisation, 0, 'f', 1)
                       .arg(100 * r.hit_rate(), 0, 'f', 1);
    note += QStringLiteral(" — ") + supernet_status(o, s.budget_bytes);
    rows.push_back({mode, partition, note});
    if (&o != &s.outcomes.front()) baselines << tr("%1 %2").arg(mode).arg(r.subnets_per_s, 0, 'f', 2);
  }
  std::vector<std::string> names = s.layer_names;
  plan_view_->setLayerNames(names);
  plan_view_->setRows(std::move(rows));
  plan_view_->setMinimumHeight(plan_view_->sizeHint().height());

  const SupernetOutcome& own = s.outcomes.front();
  const QString space = tr("%1 space: %2 choice layers, up to %3 candidates, 10^%4 subnets")
                            .arg(QString::fromStdString(s.space))
                            .arg(s.choice_layers)
                            .arg(s.max_choices)
                            .arg(s.log10_subnets, 0, 'f', 1);
  if (own.ok) {
    const auto& r = own.result;
    summary_->setText(tr("<b>Supernet</b>, <b>%1</b>: <b>%2 subnets/s</b> (%3 subnets in %4), utilisation %5%, "
                         "candidates resident %6%<br>%7<br>baselines (subnets/s): %8")
                          .arg(QString::fromStdString(own.mode))
                          .arg(r.subnets_per_s, 0, 'f', 2)
                          .arg(r.subnets)
                          .arg(format_duration_ns(r.makespan_ms * 1e6))
                          .arg(100 * r.utilisation, 0, 'f', 1)
                          .arg(100 * r.hit_rate(), 0, 'f', 1)
                          .arg(space, baselines.join(QStringLiteral(", "))));
    std::vector<double> peaks(r.peak_resident_bytes.begin(), r.peak_resident_bytes.end());
    plotMemory(peaks, std::vector<double>(peaks.size(), s.budget_bytes));
    RunBatch b;
    RunInfo info;
    info.name = job_->isValid() ? job_->spec()->name : std::string();
    info.source = "predicted";
    info.stages = static_cast<int>(s.stages.size());
    b.info = info;
    b.events = s.events;
    b.finished = true;
    predicted_run_->append(b);
  } else {
    summary_->setText(QStringLiteral("<span style='color:#d9534f'>%1: %2</span><br>%3")
                          .arg(QString::fromStdString(own.mode), QString::fromStdString(own.error).toHtmlEscaped(), space));
  }
  memory_plot_->replot(QCustomPlot::rpQueuedReplot);
  emit predictionUpdated();
}

}  // namespace pw::gui
