#include "gui/widgets/explain_dock.h"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QToolButton>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "core/analysis/offload_summary.h"
#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/widgets/stage_labels.h"
#include "gui/widgets/theme.h"

namespace pw::gui {

QColor idle_cause_color(IdleCause c) {
  switch (c) {
    case IdleCause::Fill: return QColor(120, 160, 220);
    case IdleCause::Drain: return QColor(70, 110, 180);
    case IdleCause::Dependency: return QColor(230, 120, 60);
    case IdleCause::Transfer: return QColor(150, 100, 200);
    case IdleCause::Recompute: return QColor(220, 190, 60);
    case IdleCause::SwapStall: return QColor(200, 80, 160);
    case IdleCause::Optimizer: return QColor(110, 180, 110);
    case IdleCause::HostOverhead: return QColor(150, 150, 150);
    case IdleCause::Imbalance: return QColor(210, 70, 70);
    case IdleCause::Migration: return QColor(60, 170, 170);
    case IdleCause::GradientSync: return QColor(170, 92, 52);  // the all-reduce bars' colour (theme.cpp)
    case IdleCause::TensorSync: return QColor(150, 60, 100);   // the tensor all-reduce bars' colour (theme.cpp)
  }
  return Qt::gray;
}

namespace {
constexpr int kComputeSeries = kIdleCauseCount;
QColor compute_color() { return QColor(70, 70, 70); }
}  // namespace

ExplainDock::ExplainDock(ExplainModel* model, JobModel* job, QWidget* parent)
    : QWidget(parent),
      model_(model),
      job_(job),
      plot_(new QCustomPlot(this)),
      summary_(new QLabel(this)),
      suggestions_(new QTreeWidget(this)),
      notes_(new QLabel(this)),
      show_predicted_(new QAction(tr("Show predicted"), this)) {
  setObjectName(QStringLiteral("explainDock"));
  plot_->setObjectName(QStringLiteral("explainPlot"));
  suggestions_->setObjectName(QStringLiteral("explainSuggestions"));
  summary_->setObjectName(QStringLiteral("explainSummary"));
  summary_->setWordWrap(true);
  notes_->setObjectName(QStringLiteral("explainNotes"));
  notes_->setWordWrap(true);
  notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* advice = new QWidget(this);
  auto* advice_lay = new QVBoxLayout(advice);
  advice_lay->setContentsMargins(0, 0, 0, 0);
  advice_lay->addWidget(suggestions_, 1);
  advice_lay->addWidget(notes_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(plot_);
  split->addWidget(advice);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  show_predicted_->setObjectName(QStringLiteral("showPredicted"));
  show_predicted_->setCheckable(true);
  auto* predicted_button = new QToolButton(this);
  predicted_button->setDefaultAction(show_predicted_);
  predicted_button->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* head = new QHBoxLayout;
  head->addWidget(summary_, 1);
  head->addWidget(predicted_button, 0, Qt::AlignTop);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  lay->addLayout(head);
  lay->addWidget(split, 1);

  plot_->setMinimumHeight(160);
  plot_->yAxis->setLabel(tr("ms"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->legend->setSelectableParts(QCPLegend::spItems);
  // The legend gets its own column right of the bars: twelve entries over
  // the plot would hide the bars (and take their clicks).
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->addElement(0, 1, plot_->legend);
  plot_->plotLayout()->setColumnStretchFactor(1, 0.001);
  // Compute at the bottom, each cause stacked on the one before.
  QCPBars* below = nullptr;
  for (int n = 0; n <= kIdleCauseCount; ++n) {
    const int i = n == 0 ? kComputeSeries : n - 1;
    auto* b = new QCPBars(plot_->xAxis, plot_->yAxis);
    const QColor c = i == kComputeSeries ? compute_color() : idle_cause_color(static_cast<IdleCause>(i));
    b->setName(i == kComputeSeries ? tr("compute") : QString::fromLatin1(to_string(static_cast<IdleCause>(i))));
    b->setBrush(c);
    b->setPen(QPen(c.darker(130)));
    b->setWidth(0.6);
    b->setSelectable(QCP::stNone);  // the selection is the highlighted cause
    if (below) b->moveAbove(below);
    below = b;
    bars_[static_cast<std::size_t>(i)] = b;
  }
  style_plot(plot_);
  stage_labels_ = new StageLabels(plot_->xAxis);

  connect(plot_, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* p, int index, QMouseEvent*) {
    for (int i = 0; i < kIdleCauseCount; ++i)
      if (p == bars_[static_cast<std::size_t>(i)]) {
        const auto* data = bars_[static_cast<std::size_t>(i)]->data().data();
        if (index < 0 || index >= data->size()) return;
        const int stage = static_cast<int>(std::lround((data->constBegin() + index)->key));
        if (selected_cause_ == i && selected_stage_ == stage) clearCause();
        else selectCause(static_cast<IdleCause>(i), stage);
      }
  });
  connect(plot_, &QCustomPlot::legendClick, this, [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
    auto* pi = qobject_cast<QCPPlottableLegendItem*>(item);
    if (!pi) return;
    for (int i = 0; i < kIdleCauseCount; ++i)
      if (pi->plottable() == bars_[static_cast<std::size_t>(i)]) {
        if (selected_cause_ == i && selected_stage_ == -1) clearCause();
        else selectCause(static_cast<IdleCause>(i), -1);
      }
  });

  suggestions_->setColumnCount(3);
  suggestions_->setHeaderLabels({tr("Suggestion"), tr("Iteration (simulated)"), QString()});
  suggestions_->setRootIsDecorated(false);
  suggestions_->setWordWrap(true);
  suggestions_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  suggestions_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  suggestions_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  suggestions_->header()->setStretchLastSection(false);

  connect(model_, &ExplainModel::updated, this, &ExplainDock::refreshBars);
  connect(model_, &ExplainModel::suggestionsUpdated, this, &ExplainDock::refreshSuggestions);
  connect(model_, &ExplainModel::predictionAvailabilityChanged, this, &ExplainDock::refreshPredictedAction);
  connect(show_predicted_, &QAction::toggled, model_, &ExplainModel::setShowPredicted);
  refreshBars();
  refreshSuggestions();
  refreshPredictedAction();
}

void ExplainDock::refreshBars() {
  const ExplainResult& r = model_->result();
  QVector<double> keys;
  std::array<QVector<double>, kIdleCauseCount + 1> values;
  double ymax = 1e-3;
  std::int64_t wall = 0, idle = 0;
  for (const auto& s : r.stages) {
    keys.push_back(s.stage);
    values[kComputeSeries].push_back(static_cast<double>(s.compute_ns) / 1e6);
    for (int c = 0; c < kIdleCauseCount; ++c) {
      values[static_cast<std::size_t>(c)].push_back(static_cast<double>(s.cause_ns[static_cast<std::size_t>(c)]) / 1e6);
      idle += s.cause_ns[static_cast<std::size_t>(c)];
    }
    wall += s.wall_ns;
    ymax = std::max(ymax, static_cast<double>(s.wall_ns) / 1e6);
  }
  for (int i = 0; i <= kIdleCauseCount; ++i) bars_[static_cast<std::size_t>(i)]->setData(keys, values[static_cast<std::size_t>(i)], true);
  plot_->xAxis->setRange(-0.6, std::max<double>(1, static_cast<double>(r.stages.size())) - 0.4);
  stage_labels_->setCount(static_cast<int>(r.stages.size()));
  plot_->yAxis->setRange(0, ymax * 1.05);
  if (r.stages.empty()) {
    summary_->setText(tr("No run to explain."));
  } else {
    const QString what = r.iteration >= 0       ? tr("iteration %1").arg(r.iteration)
                         : r.iterations == 1 ? tr("1 complete iteration")
                                             : tr("%1 complete iterations").arg(r.iterations);
    QString text = tr("%1: idle %2% of the stages' time; click a cause to see it on the timeline.")
                       .arg(what)
                       .arg(wall > 0 ? 100.0 * static_cast<double>(idle) / static_cast<double>(wall) : 0.0, 0, 'f', 1);
    if (model_->showPredicted() && !r.predicted_error.isEmpty()) {
      text += tr("\nNo prediction: %1").arg(r.predicted_error);
    } else if (model_->showPredicted() && r.predicted) {
      const PredictedTimeline& p = *r.predicted;
      text += tr("\nPredicted (faded rows): iteration %1 measured %2 ms, predicted %3 ms (plan v%4). ")
                  .arg(p.iteration)
                  .arg(static_cast<double>(p.diff.measured_iteration_ns) / 1e6, 0, 'f', 2)
                  .arg(static_cast<double>(p.diff.predicted_iteration_ns) / 1e6, 0, 'f', 2)
                  .arg(p.plan_version);
      if (p.plan_diff.iterations > 1)
        text += tr("Over %1 iterations of the plan: %2 ms measured, %3 ms predicted (model error %4%). ")
                    .arg(p.plan_diff.iterations)
                    .arg(static_cast<double>(p.plan_diff.measured_iteration_ns) / 1e6, 0, 'f', 2)
                    .arg(static_cast<double>(p.plan_diff.predicted_iteration_ns) / 1e6, 0, 'f', 2)
                    .arg(100 * model_error_on_run(p), 0, 'f', 1);
      if (p.mark) {
        const Divergence& d = p.mark->divergence;
        text += tr("First divergence (red): stage %1 %2%3 starts at %4 ms, predicted %5 ms.")
                    .arg(d.stage)
                    .arg(QLatin1String(to_string(d.kind)))
                    .arg(d.microbatch >= 0 ? tr(" of microbatch %1").arg(d.microbatch) : QString())
                    .arg(static_cast<double>(d.measured_offset_ns) / 1e6, 0, 'f', 2)
                    .arg(static_cast<double>(d.predicted_offset_ns) / 1e6, 0, 'f', 2);
      } else {
        text += tr("No action starts more than %1 ms off the prediction.").arg(static_cast<double>(p.diff.threshold_ns) / 1e6, 0, 'f', 2);
      }
    }
    // Which layers of which stage went to the host and what the link hid:
    // core's lines, as `pipewright explain` prints them (the report's
    // iteration, once the report is computed).
    if (r.report && r.report->offload)
      for (const std::string& line : offload_lines(*r.report->offload)) text += QStringLiteral("\n") + QString::fromStdString(line);
    summary_->setText(text);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
  if (selected_cause_ >= 0) selectCause(static_cast<IdleCause>(selected_cause_), selected_stage_);  // new intervals
}

void ExplainDock::refreshSuggestions() {
  suggestions_->clear();
  const ExplainSuggestions& s = model_->suggestions();
  if (!model_->suggestionsReady()) {
    auto* it = new QTreeWidgetItem(suggestions_, {tr("Simulating changes to the run's job...")});
    it->setDisabled(true);
    showNotes({});
    return;
  }
  if (s.report.suggestions.empty()) {
    auto* it = new QTreeWidgetItem(suggestions_, {tr("No suggestions: %1").arg(s.none_reason)});
    it->setDisabled(true);
    showNotes(s);
    return;
  }
  // The report's advice as `pipewright explain` prints it: core applied the
  // rule (a gain must exceed the model's error on this run), so every row
  // here is one the CLI offers, in its order; the withheld are in the notes.
  const double error = s.model_error;
  for (int i = 0; i < static_cast<int>(s.report.suggestions.size()); ++i) {
    const Suggestion& g = s.report.suggestions[static_cast<std::size_t>(i)];
    auto* it = new QTreeWidgetItem(suggestions_);
    it->setText(0, QString::fromStdString(g.change));
    it->setText(1, tr("%1 -> %2 ms (%3%)")
                       .arg(g.iteration_ms_before, 0, 'f', 1)
                       .arg(g.iteration_ms_after, 0, 'f', 1)
                       .arg(100.0 * (g.iteration_ms_after / g.iteration_ms_before - 1.0), 0, 'f', 0));
    QStringList sets;
    for (const auto& o : g.overrides) sets << QStringLiteral("--set ") + QString::fromStdString(o);
    it->setToolTip(0, tr("%1\naddresses: %2\n%3")
                          .arg(QString::fromStdString(g.change), QString::fromStdString(g.addresses), sets.join('\n')));
    auto* apply = new QPushButton(tr("Apply"), suggestions_);
    apply->setObjectName(QStringLiteral("applySuggestion%1").arg(i));
    apply->setToolTip(tr("Set %1 in the designer's job").arg(sets.join(QStringLiteral(", "))));
    apply->setEnabled(job_ != nullptr);
    if (error < 0)
      apply->setToolTip(apply->toolTip() + tr("\n(unchecked against the run: it recorded no plan and profile to "
                                              "compare the model with)"));
    connect(apply, &QPushButton::clicked, this, [this, i] { applySuggestion(i); });
    suggestions_->setItemWidget(it, 2, apply);
  }
  showNotes(s);
}

void ExplainDock::showNotes(const ExplainSuggestions& s) {
  QStringList lines;
  if (s.model_error >= 0)
    lines << tr("Offered when the simulated gain exceeds the model's error on this run, %1%.").arg(100 * s.model_error, 0, 'f', 1);
  // The advice's own notes (withheld, unchecked) in full; candidates that
  // could not be simulated counted, their reasons in the tooltip: they
  // would crowd the list out of a dock this size.
  QStringList unsimulated, all;
  for (const auto& n : s.notes) {
    const QString q = QString::fromStdString(n);
    all << tr("note: %1").arg(q);
    if (q.startsWith(QLatin1String("suggestion not simulated: "))) unsimulated << q;
    else lines << tr("note: %1").arg(q);
  }
  if (!unsimulated.isEmpty())
    lines << tr("%n change(s) could not be simulated (hover for why).", nullptr, static_cast<int>(unsimulated.size()));
  notes_->setToolTip(all.join('\n'));
  notes_->setText(lines.join('\n'));
  notes_->setVisible(!lines.isEmpty());
}

void ExplainDock::refreshPredictedAction() {
  const bool available = model_->predictionAvailable();
  show_predicted_->setEnabled(available);
  if (!available && show_predicted_->isChecked()) show_predicted_->setChecked(false);
  show_predicted_->setToolTip(
      !model_->predictionReady() ? tr("Reading the run's job, profile and plan...")
      : available ? tr("Draw the simulator's timeline of the run's plan under each stage (faded), each iteration "
                       "aligned at the measured one's start; the first action that starts more than the threshold "
                       "off the prediction is outlined in red")
                  : tr("No predicted timeline: %1").arg(model_->predictionNoneReason()));
}

void ExplainDock::applySuggestion(int i) {
  const auto& list = model_->suggestions().report.suggestions;
  if (!job_ || i < 0 || i >= static_cast<int>(list.size())) return;
  const Suggestion g = list[static_cast<std::size_t>(i)];  // applying may replace the list
  apply_suggestion(*job_, g);
  emit suggestionApplied(QString::fromStdString(g.change));
}

void ExplainDock::selectCause(IdleCause cause, int stage) {
  selected_cause_ = static_cast<int>(cause);
  selected_stage_ = stage;
  for (int i = 0; i <= kIdleCauseCount; ++i) {
    auto* b = bars_[static_cast<std::size_t>(i)];
    QColor c = b->brush().color();
    c.setAlpha(i == selected_cause_ ? 255 : 90);
    b->setBrush(c);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
  emit causeSelected(cause, stage, idle_cause_color(cause));
}

void ExplainDock::clearCause() {
  selected_cause_ = selected_stage_ = -1;
  for (int i = 0; i <= kIdleCauseCount; ++i) {
    auto* b = bars_[static_cast<std::size_t>(i)];
    QColor c = b->brush().color();
    c.setAlpha(255);
    b->setBrush(c);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
  emit causeCleared();
}

}  // namespace pw::gui
