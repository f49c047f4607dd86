#include "gui/widgets/designer_widget.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QFileDialog>
#include <QFileInfo>
#include <QTabWidget>
#include <QGridLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include <limits>
#include <string_view>

#include "core/plan/planner.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/device.h"
#include "core/spec/job_fields.h"
#include "core/model/profile_io.h"
#include "gui/models/job_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"
#include "gui/models/supernet_comparison_model.h"
#include "gui/widgets/designer_search_space.h"
#include "gui/widgets/form_rows.h"
#include "gui/widgets/json_key_editor.h"
#include "gui/widgets/plan_view.h"
#include "gui/widgets/run_launcher.h"
#include "gui/widgets/stale_veil.h"
#include "gui/widgets/theme.h"
#include "gui/widgets/timeline_view.h"

namespace pw::gui {
namespace {

using form::combo;
using form::dspin;
using form::qlist;
using form::spin;

const QStringList kTransformerKinds{"transformer", "bert", "gpt"};

// Editors for the rows of the core's range table (core/spec/job_fields.h):
// the form offers what the parser accepts. With `unset`, the value below
// the row's minimum means "not set".
QSpinBox* ranged_spin(std::string_view path, const QString& unset = {}) {
  const FieldRange& r = job_field_range(path);
  return spin(static_cast<int>(r.min), static_cast<int>(std::min<double>(r.max, std::numeric_limits<int>::max())), unset);
}
QDoubleSpinBox* ranged_dspin(std::string_view path, int decimals, const QString& unset = {}) {
  const FieldRange& r = job_field_range(path);
  return dspin(unset.isEmpty() ? r.min : 0.0, r.max, decimals, unset);
}

// Parameter counts from bytes: fp16 (mixed precision) keeps 2-byte weights;
// fp32 is the default (core/spec/job_spec.h).
bool weights_are_fp16(const JobModel& job) {
  return job.value(QStringLiteral("model.precision")).toString() == QLatin1String("fp16");
}
const QStringList kBertGpt{"bert", "gpt"};

}  // namespace

DesignerWidget::DesignerWidget(JobModel* job, QWidget* parent)
    : QWidget(parent),
      job_(job),
      general_error_(new QLabel(this)),
      search_space_(new SearchSpaceEditor(job, this)),
      data_(new JsonKeyEditor(job, "data", this)),
      summary_(new QLabel(this)),
      plan_view_(new PlanView(this)),
      memory_plot_(new QCustomPlot(this)),
      table_(new QTableView(this)),
      comparison_(new PlannerComparisonModel(this)),
      supernet_comparison_(new SupernetComparisonModel(this)),
      partition_caption_(new QLabel(this)),
      timeline_(new TimelineView(this)),
      predicted_run_(new RunModel(this)),
      right_tabs_(new QTabWidget(this)),
      layers_(new LayerTableModel(this)),
      layer_table_(new QTableView(this)),
      layer_source_(new QLabel(this)),
      measure_(new QPushButton(tr("Measure costs"), this)) {
  setObjectName(QStringLiteral("designer"));
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(split);

  auto* scroll = new QScrollArea(split);
  scroll->setWidgetResizable(true);
  auto* form_host = new QWidget;
  buildForm(form_host);
  scroll->setWidget(form_host);
  scroll->setMinimumWidth(340);

  auto* right = new QSplitter(Qt::Vertical, split);
  auto* top = new QWidget(right);
  auto* top_lay = new QVBoxLayout(top);
  top_lay->setContentsMargins(4, 4, 4, 4);
  summary_->setObjectName(QStringLiteral("predictionSummary"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top_lay->addWidget(summary_);
  partition_caption_->setObjectName(QStringLiteral("partitionCaption"));
  top_lay->addWidget(partition_caption_);
  top_lay->addWidget(plan_view_, 1);
  auto* mid = new QSplitter(Qt::Horizontal, right);
  memory_plot_->setObjectName(QStringLiteral("predictedMemoryPlot"));
  memory_plot_->setMinimumHeight(150);
  memory_plot_->yAxis->setLabel(tr("peak GiB"));
  memory_plot_->xAxis->setLabel(tr("stage"));
  style_plot(memory_plot_);
  mid->addWidget(memory_plot_);
  table_->setObjectName(QStringLiteral("plannerTable"));
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  right_tabs_->setObjectName(QStringLiteral("designerTabs"));
  right_tabs_->addTab(table_, tr("Planners"));
  auto* layers_page = new QWidget;
  auto* lp = new QVBoxLayout(layers_page);
  lp->setContentsMargins(2, 2, 2, 2);
  auto* lh = new QHBoxLayout;
  layer_source_->setObjectName(QStringLiteral("layerSource"));
  layer_source_->setWordWrap(true);
  measure_->setObjectName(QStringLiteral("measureLayers"));
  measure_->setToolTip(tr("Time every layer's forward and backward on this machine (libtorch), then plan with those costs"));
  lh->addWidget(layer_source_, 1);
  lh->addWidget(measure_);
  lp->addLayout(lh);
  layer_table_->setModel(layers_);
  layer_table_->setObjectName(QStringLiteral("layerTable"));
  layer_table_->verticalHeader()->setVisible(false);
  layer_table_->horizontalHeader()->setStretchLastSection(true);
  lp->addWidget(layer_table_);
  right_tabs_->addTab(layers_page, tr("Layers"));
  mid->addWidget(right_tabs_);
  mid->setStretchFactor(1, 2);
  connect(measure_, &QPushButton::clicked, this, [this] { measureLayers(); });
  timeline_->setRun(predicted_run_);
  timeline_->setMinimumHeight(150);
  right->addWidget(timeline_);
  right->setStretchFactor(2, 2);
  split->setStretchFactor(1, 3);
  showComparison(false);
  prediction_views_ = {partition_caption_, plan_view_, memory_plot_, right_tabs_, timeline_};

  debounce_.setSingleShot(true);
  debounce_.setInterval(150);
  connect(&debounce_, &QTimer::timeout, this, &DesignerWidget::startPrediction);
  connect(&watcher_, &QFutureWatcher<Prediction>::finished, this, [this] {
    in_flight_ = false;
    applyPrediction(watcher_.result());
    // The job went invalid while this ran: what it shows is already stale.
    if (!job_->isValid()) setPredictionStale(true);
    if (again_) {
      again_ = false;
      startPrediction();
    }
  });
  connect(job_, &JobModel::changed, this, [this] {
    inspectModel();
    // A change made elsewhere (a document set from outside the form, a
    // measured profile) shows in the editors too.
    if (!editing_ && !loading_) loadFromModel();
    else if (!loading_) showValidation();
    schedulePrediction();
  });
  connect(job_, &JobModel::fileChanged, this, &DesignerWidget::loadFromModel);
  loadFromModel();
  schedulePrediction();
}

DesignerWidget::~DesignerWidget() {
  watcher_.waitForFinished();
  if (measuring()) {
    profiler_->disconnect(this);
    profiler_->kill();
    profiler_->waitForFinished(1000);
  }
}

void DesignerWidget::buildForm(QWidget* host) {
  auto* lay = new QVBoxLayout(host);
  general_error_->setObjectName(QStringLiteral("generalError"));
  general_error_->setWordWrap(true);
  lay->addWidget(general_error_);
  // Captions and fields in a QGridLayout, not a QFormLayout: Qt 6.4's
  // QFormLayout writes past its row array when a row is hidden and another
  // item has height-for-width (a word-wrapped error label shown), its
  // hidden rows keeping stale layout indices (heap corruption, seen under
  // valgrind as invalid writes in QFormLayout::setGeometry). A grid lays
  // out hidden widgets as absent.
  auto group = [&](const QString& title) {
    auto* box = new QGroupBox(title, host);
    auto* form = new QGridLayout(box);
    form->setColumnStretch(1, 1);
    lay->addWidget(box);
    return form;
  };
  QGridLayout* f = group(tr("Job"));
  addField(f, "name", tr("Name"), new QLineEdit);

  f = group(tr("Model"));
  addField(f, "model.kind", tr("Kind"), combo(qlist(model_kind_names())), {},
           tr("transformer: encoder-decoder; bert/gpt: encoder/decoder stacks; uniform: identical layers with costs given "
              "directly; profile: the layers of a measured profile file; torchscript: your own scripted nn.Sequential (.pt)"));
  auto* browse = new QPushButton(tr("Browse…"));
  browse->setObjectName(QStringLiteral("browseModel"));
  addField(f, "model.path", tr("TorchScript file"), new QLineEdit, {"torchscript"},
           tr("A module saved by torch.jit.save whose top-level children run in sequence"), browse);
  connect(browse, &QPushButton::clicked, this, [this] {
    QString file = QFileDialog::getOpenFileName(this, tr("TorchScript model"), QString(), tr("TorchScript (*.pt *.pth);;All files (*)"));
    if (!file.isEmpty()) static_cast<QLineEdit*>(fields_["model.path"].editor)->setText(file);
  });
  addField(f, "model.input.shape", tr("Input shape"), new QLineEdit, {"torchscript"},
           tr("one sample's shape, comma-separated, e.g. 1, 28, 28"));
  addField(f, "model.input.dtype", tr("Input type"), combo({"float32", "int64"}), {"torchscript"},
           tr("int64: token ids (a language model over `classes` symbols)"));
  addField(f, "model.layers", tr("Layers"), ranged_spin("model.layers"), {"bert", "gpt", "uniform"});
  addField(f, "model.encoder_layers", tr("Encoder layers"), ranged_spin("model.encoder_layers"), {"transformer"});
  addField(f, "model.decoder_layers", tr("Decoder layers"), ranged_spin("model.decoder_layers"), {"transformer"});
  addField(f, "model.hidden", tr("Hidden"), ranged_spin("model.hidden"), kTransformerKinds);
  addField(f, "model.heads", tr("Heads"), ranged_spin("model.hidden", tr("auto")), kTransformerKinds);  // at most hidden
  addField(f, "model.seq_len", tr("Sequence length"), ranged_spin("model.seq_len"), kTransformerKinds);
  addField(f, "model.vocab", tr("Vocabulary"), ranged_spin("model.vocab", tr("default")), kTransformerKinds);
  addField(f, "model.precision", tr("Precision"), combo({"fp16", "fp32"}), {});
  addField(f, "model.input", tr("Input features"), ranged_spin("model.input", tr("default")), {"mlp"});
  addField(f, "model.widths", tr("Hidden widths"), new QLineEdit, {"mlp"}, tr("comma-separated, e.g. 512, 256"));
  addField(f, "model.image_size", tr("Image size"), ranged_spin("model.image_size", tr("default")), {"cnn"});
  addField(f, "model.in_channels", tr("Input channels"), ranged_spin("model.in_channels", tr("default")), {"cnn"});
  addField(f, "model.channels", tr("Channels per conv"), new QLineEdit, {"cnn"}, tr("comma-separated, e.g. 32, 64"));
  addField(f, "model.classes", tr("Classes"), ranged_spin("model.classes", tr("default")), {"mlp", "cnn", "torchscript"});
  addField(f, "model.fwd_ms", tr("Forward ms/layer"), ranged_dspin("model.fwd_ms", 3), {"uniform"});
  addField(f, "model.bwd_ms", tr("Backward ms/layer"), ranged_dspin("model.bwd_ms", 3), {"uniform"});
  addField(f, "model.activation_mb", tr("Activation MB/layer"), ranged_dspin("model.activation_mb", 2), {"uniform"});
  addField(f, "model.param_mb", tr("Parameters MB/layer"), ranged_dspin("model.param_mb", 2), {"uniform"});
  addField(f, "model.output_mb", tr("Output MB/layer"), ranged_dspin("model.output_mb", 2), {"uniform"});
  addField(f, "model.profile", tr("Measured profile"), new QLineEdit, {},
           tr("A profile file (Pipewright JSON or PipeDream graph.txt) replacing the analytic costs"));

  f = group(tr("Training"));
  addField(f, "training.optimizer", tr("Optimizer"), combo({"sgd", "momentum", "adam"}));
  addField(f, "training.lr", tr("Learning rate"), ranged_dspin("training.lr", 6));
  addField(f, "training.batch_size", tr("Batch size"), ranged_spin("training.batch_size"));
  addField(f, "training.microbatch_size", tr("Microbatch size"), ranged_spin("training.microbatch_size", tr("auto")), {},
           tr("auto: the planner chooses the size with the plan (batch size stays yours)"));
  addField(f, "training.iterations", tr("Iterations"), ranged_spin("training.iterations"));
  addField(f, "training.seed", tr("Seed"), form::uint64_edit(), {}, tr("any 64-bit unsigned integer"));

  f = group(tr("Cluster"));
  QStringList presets = qlist(device_preset_names());
  presets << QStringLiteral("custom");
  addField(f, "cluster.device", tr("Device"), combo(presets));
  addField(f, "cluster.devices", tr("Devices"), ranged_spin("cluster.devices"));
  addField(f, "cluster.memory_gb", tr("Memory GiB"), ranged_dspin("cluster.memory_gb", 2, tr("preset")), {},
           tr("Overrides the preset's memory (the per-stage budget)"));

  f = group(tr("Pipeline"));
  addField(f, "pipeline.stages", tr("Stages"), ranged_spin("pipeline.stages"));
  addField(f, "pipeline.microbatches", tr("Microbatches"), ranged_spin("pipeline.microbatches", tr("auto")), {},
           tr("batch_size / microbatch_size when auto"));
  addField(f, "pipeline.schedule", tr("Schedule"), combo(qlist(pipeline_schedule_choices())), {},
           tr("auto: the planner chooses among 1f1b and the zero-bubble schedules"));
  addField(f, "pipeline.planner", tr("Planner"), combo(qlist(planner_names())));
  addField(f, "pipeline.chunks", tr("Chunks"), ranged_spin("pipeline.chunks", tr("default")), {}, tr("model chunks per device: interleaved (any); the V schedules zb-v, dualpipe-v, v-half, v-min and generated as a V (2)"));

  auto* ss = new QGroupBox(tr("Search space (supernet)"), host);
  auto* ss_lay = new QVBoxLayout(ss);
  ss_lay->addWidget(search_space_);
  lay->addWidget(ss);

  auto* raw = new QGroupBox(tr("Data (JSON)"), host);
  auto* rf = new QGridLayout(raw);
  rf->setColumnStretch(1, 1);
  data_->setPlaceholderText(tr("{\"kind\": \"synthetic\"}"));
  data_->setMaximumHeight(70);
  auto* data_label = new QLabel(tr("Data"));
  rf->addWidget(data_label, 0, 0, Qt::AlignLeft | Qt::AlignTop);
  rf->addWidget(data_, 0, 1);
  rf->addWidget(data_->syntaxError(), 1, 1);
  fields_["data"] = Field{"data", data_, data_->syntaxError(), data_label, data_, {}};
  lay->addWidget(raw);

  auto* buttons = new QHBoxLayout;
  auto* sim = new QPushButton(QIcon(QStringLiteral(":/icons/simulate.svg")), tr("Simulate run"), host);
  sim->setToolTip(tr("Open a simulated run of this job in the monitor (F5)"));
  auto* launch = new QPushButton(QIcon(QStringLiteral(":/icons/launch.svg")), tr("Launch…"), host);
  launch->setToolTip(tr("Run this job with `pipewright run` and watch it live (Ctrl+R)"));
  connect(sim, &QPushButton::clicked, this, &DesignerWidget::simulateRequested);
  connect(launch, &QPushButton::clicked, this, &DesignerWidget::launchRequested);
  buttons->addWidget(sim);
  buttons->addWidget(launch);
  lay->addLayout(buttons);
  lay->addStretch(1);
}

void DesignerWidget::addField(QGridLayout* form, const QString& path, const QString& label, QWidget* editor,
                              const QStringList& kinds, const QString& tip, QWidget* extra) {
  const form::Row r = form::add_row(form, path, label, editor, tip, extra);
  fields_[path] = Field{path, editor, r.error, r.caption, r.row, kinds};
  form::on_edited(editor, this, [this, path] { onEditorChanged(path); });
}

QWidget* DesignerWidget::editorFor(const QString& path) const {
  auto it = fields_.find(path);
  return it == fields_.end() ? search_space_->editorFor(path) : it->editor;
}

QLabel* DesignerWidget::errorLabelFor(const QString& path) const {
  auto it = fields_.find(path);
  return it == fields_.end() ? search_space_->errorLabelFor(path) : it->error;
}

QString DesignerWidget::generalError() const { return general_error_->isVisible() ? general_error_->text() : QString(); }

// The microbatch size's "auto" is a value the job says, not an unset field.
constexpr auto kMicrobatchSize = "training.microbatch_size";

QVariant DesignerWidget::editorValue(const Field& f) const {
  QVariant v = form::value(f.editor, f.path == "model.widths" || f.path == "model.channels" || f.path == "model.input.shape");
  if (f.path == kMicrobatchSize && !v.isValid()) return QStringLiteral("auto");
  return v;
}

void DesignerWidget::setEditorValue(const Field& f, const QVariant& v) {
  if (f.path == kMicrobatchSize && v.typeId() == QMetaType::QString && v.toString() == QStringLiteral("auto")) {
    form::set_value(f.editor, QVariant());
    return;
  }
  if (f.path == kMicrobatchSize && !v.isValid()) {
    form::set_value(f.editor, 1);  // absent: the parser's default
    return;
  }
  form::set_value(f.editor, v);
}

void DesignerWidget::loadFromModel() {
  loading_ = true;
  for (const auto& f : fields_)
    if (f.path != "data") setEditorValue(f, job_->value(f.path));
  data_->load();
  search_space_->load();
  loading_ = false;
  updateKindVisibility();
  showValidation();
}

void DesignerWidget::updateKindVisibility() {
  const QString kind = job_->value(QStringLiteral("model.kind")).toString();
  for (const auto& f : fields_) {
    if (f.kinds.isEmpty()) continue;
    const bool on = f.kinds.contains(kind);
    f.label->setVisible(on);
    f.row->setVisible(on);
  }
}

void DesignerWidget::onEditorChanged(const QString& path) {
  if (loading_) return;
  if (path == "model.kind") return onKindChanged();
  QScopedValueRollback<bool> editing(editing_, true);
  job_->setValue(path, editorValue(fields_[path]));
}

void DesignerWidget::onKindChanged() {
  // The new kind takes a different set of fields: rebuild the model object
  // from the editors that apply to it (their current values or defaults).
  const QString kind = editorValue(fields_["model.kind"]).toString();
  auto doc = job_->document();
  nlohmann::json model = nlohmann::json::object();
  model["kind"] = kind.toStdString();
  for (const auto& f : fields_) {
    if (!f.path.startsWith("model.") || f.path == "model.kind") continue;
    if (!f.kinds.isEmpty() && !f.kinds.contains(kind)) continue;
    QVariant v = editorValue(f);
    if (!v.isValid() || (v.typeId() == QMetaType::Int && v.toInt() == 0 && !f.kinds.isEmpty() && f.path != "model.encoder_layers" &&
                         f.path != "model.decoder_layers"))
      continue;
    model[nlohmann::json::json_pointer("/" + f.path.mid(6).replace('.', '/').toStdString())] = JobModel::toJson(v);
  }
  doc["model"] = model;
  {
    QScopedValueRollback<bool> editing(editing_, true);
    job_->setDocument(doc);
  }
  loading_ = true;
  for (const auto& f : fields_)
    if (f.path.startsWith("model.")) setEditorValue(f, job_->value(f.path));
  loading_ = false;
  updateKindVisibility();
  showValidation();
}

void DesignerWidget::showValidation() {
  for (const auto& f : fields_) {
    if (f.path == "data") continue;
    f.error->setVisible(false);
    f.editor->setStyleSheet(QString());
  }
  general_error_->setVisible(false);
  if (!inspect_error_.isEmpty()) {
    const Field& f = fields_["model.path"];
    f.error->setText(inspect_error_);
    f.error->setVisible(true);
    f.editor->setStyleSheet(QStringLiteral("border: 1px solid #d9534f"));
  }
  // The search space's own editor places (and clears) its errors.
  const auto rest = search_space_->showErrors(job_->errors());
  if (job_->isValid()) return;
  // Every error at once, each under its field; the rest (no visible field
  // for the path) listed at the top.
  QStringList general;
  QMap<QString, QStringList> by_field;
  for (const auto& e : rest) {
    auto it = fields_.find(e.path);
    if (it == fields_.end()) it = fields_.find(e.path.left(e.path.indexOf('[')));  // model.widths[1]
    if (it != fields_.end() && it->editor->isVisibleTo(this)) {
      by_field[it->path] << (e.path == it->path ? e.message : e.path.mid(it->path.size()) + ": " + e.message);
    } else {
      general << QStringLiteral("<b>%1</b>: %2").arg(e.path.toHtmlEscaped(), e.message.toHtmlEscaped());
    }
  }
  if (!inspect_error_.isEmpty()) by_field[QStringLiteral("model.path")] << inspect_error_;
  for (auto it = by_field.begin(); it != by_field.end(); ++it) {
    const Field& f = fields_[it.key()];
    it.value().removeDuplicates();
    f.error->setText(it.value().join('\n'));
    f.error->setVisible(true);
    f.editor->setStyleSheet(QStringLiteral("border: 1px solid #d9534f"));
  }
  if (!general.isEmpty()) {
    general_error_->setText(QStringLiteral("<span style='color:#d9534f'>%1</span>").arg(general.join(QStringLiteral("<br>"))));
    general_error_->setVisible(true);
  }
}

// in_flight_, not watcher_.isRunning(): the future finishes before its
// finished() signal is delivered, and until then the result is not shown.
bool DesignerWidget::predictionPending() const { return debounce_.isActive() || in_flight_ || again_; }

void DesignerWidget::schedulePrediction() { debounce_.start(); }

void DesignerWidget::startPrediction() {
  if (!job_->isValid()) {
    setPredictionStale(true);
    return;
  }
  if (in_flight_) {
    again_ = true;  // one in flight at a time; the newest edit runs next
    return;
  }
  requested_revision_ = job_->revision();
  JobSpec spec = *job_->spec();
  // Stale figures stay greyed until the new ones land; the fix note goes.
  summary_->setText(stale_ ? tr("<i>Updating the prediction…</i>") : summary_->text() + tr(" <i>(updating…)</i>"));
  in_flight_ = true;
  watcher_.setFuture(QtConcurrent::run([spec] { return predict(spec); }));
}

void DesignerWidget::showComparison(bool supernet) {
  QAbstractItemModel* m = supernet ? static_cast<QAbstractItemModel*>(supernet_comparison_) : comparison_;
  if (table_->model() != m) {
    table_->setModel(m);
    // The view keeps the other model's column widths: back to the defaults
    // (a planner's partition is long; at its content width Status scrolls away).
    for (int c = 0; c < m->columnCount(); ++c) table_->setColumnWidth(c, table_->horizontalHeader()->defaultSectionSize());
  }
  // The modes' figures are short: fit them ("1.01 MiB of 512.0 MiB" would wrap).
  if (supernet) table_->resizeColumnsToContents();
  right_tabs_->setTabText(right_tabs_->indexOf(table_), supernet ? tr("Modes") : tr("Planners"));
  partition_caption_->setText(supernet ? tr("<b>Partition</b> of the choice layers, the same under every mode "
                                            "(the job's mode first, then the others)")
                                       : tr("<b>Partition</b> (chosen planner first, then the baselines)"));
}

void DesignerWidget::setPredictionStale(bool stale) {
  stale_ = stale;
  // Greyed and inert rather than blank: the last valid figures are still
  // worth comparing against while the user fixes a field.
  for (QWidget* w : prediction_views_) set_veiled(w, stale);
  if (stale) {
    const bool shown = prediction_.supernet || !prediction_.outcomes.empty();
    summary_->setText(shown ? tr("<i>Fix the highlighted field to see the prediction; the greyed figures below are "
                                 "the last valid job's.</i>")
                            : tr("<i>Fix the highlighted field to see the prediction.</i>"));
  }
}

void DesignerWidget::plotMemory(const std::vector<double>& peak_bytes, const std::vector<double>& budget_bytes) {
  auto* ok_bars = new QCPBars(memory_plot_->xAxis, memory_plot_->yAxis);
  auto* over_bars = new QCPBars(memory_plot_->xAxis, memory_plot_->yAxis);
  ok_bars->setName(tr("fits"));
  over_bars->setName(tr("over budget"));
  ok_bars->setBrush(QColor(92, 168, 104));
  over_bars->setBrush(QColor(217, 83, 79));
  ok_bars->setPen(Qt::NoPen);
  over_bars->setPen(Qt::NoPen);
  double budget = 0, top = 0;
  QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
  for (int s = 0; s < static_cast<int>(peak_bytes.size()); ++s) {
    double peak = peak_bytes[s] / 1073741824.0;
    budget = budget_bytes[s] / 1073741824.0;
    (peak_bytes[s] > budget_bytes[s] ? over_bars : ok_bars)->addData(s, peak);
    top = std::max(top, peak);
    ticks->addTick(s, QString::number(s));
  }
  memory_plot_->xAxis->setTicker(ticks);
  auto* line = new QCPItemStraightLine(memory_plot_);
  line->point1->setCoords(-1, budget);
  line->point2->setCoords(1, budget);
  line->setPen(QPen(QColor(220, 60, 60), 1.5, Qt::DashLine));
  memory_plot_->xAxis->setRange(-0.6, peak_bytes.size() - 0.4);
  memory_plot_->yAxis->setRange(0, std::max(top, budget) * 1.12);
}

void DesignerWidget::applyPrediction(const Prediction& p) {
  prediction_ = p;
  setPredictionStale(false);
  if (p.supernet) return applySupernetPrediction(*p.supernet);
  comparison_->setPrediction(p);
  showComparison(false);
  std::vector<PlanView::Row> rows;
  for (const auto& o : p.outcomes) {
    if (!o.ok) {
      rows.push_back({QString::fromStdString(o.planner), Plan(), QString::fromStdString(o.error)});
      continue;
    }
    const SimResult& r = o.iteration.result;
    QString note = tr("%1 samples/s, bubble %2%").arg(r.throughput_samples_per_s, 0, 'f', 1).arg(100 * r.bubble_fraction, 0, 'f', 1);
    if (!r.feasible) note += QStringLiteral(" — ") + QString::fromStdString(r.reason);
    rows.push_back({QString::fromStdString(o.planner), o.iteration.plan.plan, note});
  }
  if (!p.profile.layers.empty()) {
    const bool fp16 = weights_are_fp16(*job_);
    if (job_->value(QStringLiteral("model.kind")).toString() == QLatin1String("torchscript")) {
      // The file's own layers stay; a profile only adds their costs.
      if (layers_->rowCount() > 0) layers_->applyProfile(p.profile, QString::fromStdString(p.profile.source));
    } else
      layers_->setRows(LayerTableModel::rowsFromProfile(p.profile, fp16 ? 2 : 4), QString::fromStdString(p.profile.source));
    if (job_->value(QStringLiteral("model.kind")).toString() != QLatin1String("torchscript"))
      layer_source_->setText(tr("%n layer(s), %1 costs for %2", nullptr, static_cast<int>(p.profile.layers.size()))
                                 .arg(QString::fromStdString(p.profile.source), QString::fromStdString(p.profile.device)));
  }
  plan_view_->setLayerNames(p.layer_names);
  plan_view_->setRows(std::move(rows));
  plan_view_->setMinimumHeight(plan_view_->sizeHint().height());

  memory_plot_->clearPlottables();
  memory_plot_->clearItems();
  const PlannerOutcome* c = p.chosen();
  if (c && c->ok) {
    const SimResult& r = c->iteration.result;
    summary_->setText(tr("<b>%1</b> with <b>%2</b>: <b>%3 samples/s</b>, iteration %4, bubble %5%%6")
                          .arg(QString::fromStdString(c->iteration.info.name), QString::fromStdString(c->planner))
                          .arg(r.throughput_samples_per_s, 0, 'f', 1)
                          .arg(format_duration_ns(r.iteration_time_ms * 1e6))
                          .arg(100 * r.bubble_fraction, 0, 'f', 1)
                          .arg(r.feasible ? QString() : QStringLiteral("<br><span style='color:#d9534f'>%1</span>").arg(QString::fromStdString(r.reason))));
    std::vector<double> peaks, budgets;
    for (const auto& st : r.stages) {
      peaks.push_back(static_cast<double>(st.peak_memory_bytes));
      budgets.push_back(static_cast<double>(st.memory_budget_bytes));
    }
    plotMemory(peaks, budgets);
    predicted_run_->clear();
    predicted_run_->append(repeat_iteration(c->iteration, 1));
  } else if (c) {
    summary_->setText(QStringLiteral("<span style='color:#d9534f'>%1: %2</span>")
                          .arg(QString::fromStdString(c->planner), QString::fromStdString(c->error).toHtmlEscaped()));
    predicted_run_->clear();
  }
  memory_plot_->replot(QCustomPlot::rpQueuedReplot);
  emit predictionUpdated();
}

}  // namespace pw::gui
