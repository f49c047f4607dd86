#include "gui/widgets/designer_search_space.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QSpinBox>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

#include "core/nas/search_space_fields.h"
#include "gui/models/nas_core.h"
#include "gui/models/search_space_layers_model.h"
#include "gui/widgets/json_key_editor.h"

namespace pw::gui {
namespace {

const QString kCustom = QStringLiteral("custom");

// A cell the parser's error names is red.
class ErrorCellDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

 protected:
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    if (!index.data(SearchSpaceLayersModel::ErrorRole).toString().isEmpty())
      option->backgroundBrush = QColor(217, 83, 79, 90);
  }
};

// The Op column offers the parser's candidate ops.
class OpDelegate : public ErrorCellDelegate {
 public:
  using ErrorCellDelegate::ErrorCellDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* c = form::combo(form::qlist(nas::search_space_names().ops));
    c->setParent(parent);
    return c;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    form::set_value(editor, index.data(Qt::EditRole));
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    model->setData(index, form::value(editor));
  }
};

// Editors for the rows of core's bounds table (core/nas/search_space_fields.h):
// the form offers what the parser accepts. Their minimum reads "default":
// the key left out.
QSpinBox* ranged_spin(const char* key) {
  const nas::SpaceField& r = nas::search_space_field(key);
  return form::spin(static_cast<int>(r.min), static_cast<int>(std::min<double>(r.max, std::numeric_limits<int>::max())),
                    QObject::tr("default"));
}
QDoubleSpinBox* ranged_dspin(const char* key, int decimals, nas::SpaceScope scope = nas::SpaceScope::Space) {
  const nas::SpaceField& r = nas::search_space_field(key, scope);
  // One step below the minimum is "default": the spin box's special value.
  return form::dspin(r.min - std::pow(10.0, -decimals), r.max, decimals, QObject::tr("default"));
}
QDoubleSpinBox* costs(const char* key) { return ranged_dspin(key, 3, nas::SpaceScope::Candidate); }

}  // namespace

SearchSpaceEditor::SearchSpaceEditor(JobModel* job, QWidget* parent)
    : QWidget(parent),
      job_(job),
      kind_(new QComboBox),
      structured_(new QWidget(this)),
      layers_box_(new QWidget),
      layers_(new SearchSpaceLayersModel(this)),
      table_(new QTableView),
      table_error_(new QLabel),
      general_error_(new QLabel(this)),
      json_toggle_(new QPushButton(tr("Edit as JSON"), this)),
      json_(new JsonKeyEditor(job, "search_space", this)) {
  setObjectName(QStringLiteral("searchSpaceEditor"));
  const auto& names = nas::search_space_names();
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  general_error_->setObjectName(QStringLiteral("error:search_space.*"));
  general_error_->setWordWrap(true);
  general_error_->setStyleSheet(QStringLiteral("color: #d9534f"));
  general_error_->setVisible(false);
  lay->addWidget(general_error_);

  // The grid of every search-space field (see DesignerWidget::buildForm
  // for why never a QFormLayout).
  auto* grid = new QGridLayout(structured_);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setColumnStretch(1, 1);
  kind_->addItem(tr("none (not a supernet job)"), QString());
  for (const auto& b : names.builtins) kind_->addItem(QString::fromStdString(b), QString::fromStdString(b));
  kind_->addItem(tr("custom layers"), kCustom);
  kind_row_ = form::add_row(grid, QStringLiteral("search_space.builtin"), tr("Search space"), kind_, {},
                            nullptr);
  kind_->setToolTip(tr("A supernet: every choice layer picks one candidate op per subnet"));
  connect(kind_, qOverload<int>(&QComboBox::activated), this, &SearchSpaceEditor::onKindPicked);

  const QStringList cnn{QStringLiteral("fmnist-cnn")}, uni{QStringLiteral("uniform")};
  addField(grid, "replication", tr("Replication"), ranged_spin("replication"), {"evolved-transformer"},
           tr("copies of every op with their own weights: 1-4 give 24/48/72/96 choices per encoder layer"));
  addField(grid, "choice_layers", tr("Choice layers"), ranged_spin("choice_layers"), cnn + uni);
  addField(grid, "kernels", tr("Kernels"), new QLineEdit, cnn, tr("odd conv kernel sizes, comma-separated, e.g. 3, 5, 7"), true);
  addField(grid, "widths", tr("Widths"), new QLineEdit, cnn, tr("inner widths of the conv candidates, comma-separated"), true);
  auto* skip = new QCheckBox(tr("identity candidate"));
  skip->setTristate(true);
  addField(grid, "skip", tr("Skip"), skip, cnn, tr("partially checked: not set (the parser's default)"));
  addField(grid, "choices", tr("Choices"), ranged_spin("choices"), uni, tr("identical candidates per layer"));
  addField(grid, "fwd_ms", tr("Forward ms"), costs("fwd_ms"), uni);
  addField(grid, "bwd_ms", tr("Backward ms"), costs("bwd_ms"), uni);
  addField(grid, "param_mb", tr("Parameters MB"), costs("param_mb"), uni);
  addField(grid, "optimizer_ms", tr("Optimizer ms"), costs("optimizer_ms"), uni);

  // Custom layers: the table, with its buttons and errors under it.
  auto* lb = new QVBoxLayout(layers_box_);
  lb->setContentsMargins(0, 0, 0, 0);
  table_->setObjectName(QStringLiteral("searchSpaceLayers"));
  table_->setModel(layers_);
  table_->setItemDelegate(new ErrorCellDelegate(table_));
  table_->setItemDelegateForColumn(SearchSpaceLayersModel::Op, new OpDelegate(table_));
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Expanding);  // scrolls inside, never widens the form
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setMinimumHeight(150);
  lb->addWidget(table_);
  auto* buttons = new QGridLayout;  // two by two: a row of four would widen the form
  auto selected = [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    return rows.isEmpty() ? layers_->rowCount() - 1 : rows.front().row();
  };
  auto button = [&](const QString& name, const QString& text, auto act) {
    auto* b = new QToolButton;
    b->setText(text);
    b->setObjectName(name);
    b->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    connect(b, &QToolButton::clicked, this, act);
    const int n = buttons->count();
    buttons->addWidget(b, n / 2, n % 2);
  };
  button("addLayer", tr("+ Layer"), [this] { layers_->addLayer(); });
  button("addCandidate", tr("+ Candidate"), [this, selected] { layers_->addCandidate(std::max(0, layers_->layerOf(selected()))); });
  button("removeLayer", tr("− Layer"), [this, selected] { layers_->removeLayer(layers_->layerOf(selected())); });
  button("removeCandidate", tr("− Candidate"), [this, selected] {
    const int r = selected();
    layers_->removeCandidate(layers_->layerOf(r), layers_->candidateOf(r));
  });
  buttons->setColumnStretch(2, 1);
  lb->addLayout(buttons);
  table_error_->setObjectName(QStringLiteral("error:search_space.layers"));
  table_error_->setWordWrap(true);
  table_error_->setStyleSheet(QStringLiteral("color: #d9534f"));
  table_error_->setVisible(false);
  lb->addWidget(table_error_);
  grid->addWidget(layers_box_, grid->rowCount(), 0, 1, 2);
  connect(layers_, &SearchSpaceLayersModel::edited, this, &SearchSpaceEditor::writeLayers);

  addField(grid, "window", tr("Window"), ranged_spin("window"), {},
           tr("CSP lookahead: subnets admitted past the oldest unfinished one (1 = sequential)"));
  addField(grid, "partition", tr("Partition"), form::combo(form::qlist(names.partitions)), {},
           tr("csp: boundaries refined by simulated CSP throughput"));
  addField(grid, "device_budget_gb", tr("Device budget GiB"), ranged_dspin("device_budget_gb", 2), {},
           tr("per-stage device memory for candidates; default half the device"));
  addField(grid, "sampler", tr("Sampler"), form::combo(form::qlist(names.samplers)), {});
  addField(grid, "subnet_file", tr("Subnet file"), new QLineEdit, {}, tr("sampler list: one subnet per line"));
  addField(grid, "shared", tr("Shared parameters"), form::combo(form::qlist(names.shared)), {},
           tr("frozen: embedding/stem and head stay fixed; train: CSP orders them like any shared candidate"));
  lay->addWidget(structured_);

  json_->setIndent(2);
  json_->setMinimumHeight(160);
  json_->setPlaceholderText(tr("{\"layers\": [{\"name\": \"enc\", \"repeat\": 6, \"candidates\": [{\"op\": \"attention\", \"heads\": 8}]}]}"));
  json_->setVisible(false);
  json_->syntaxError()->setParent(this);
  lay->addWidget(json_);
  lay->addWidget(json_->syntaxError());
  json_toggle_->setObjectName(QStringLiteral("searchSpaceAsJson"));
  json_toggle_->setCheckable(true);
  json_toggle_->setToolTip(tr("The whole search_space object as text, for the fields the form does not cover (search, ...)"));
  auto* toggle_row = new QHBoxLayout;
  toggle_row->addStretch(1);
  toggle_row->addWidget(json_toggle_);
  lay->addLayout(toggle_row);
  connect(json_toggle_, &QPushButton::toggled, this, [this](bool on) {
    json_->load();
    json_->setVisible(on);
    structured_->setVisible(!on);
    if (!on) load();
  });
  load();
}

void SearchSpaceEditor::addField(QGridLayout* grid, const QString& key, const QString& label, QWidget* editor,
                                 const QStringList& kinds, const QString& tip, bool list) {
  Field f{key, form::add_row(grid, QStringLiteral("search_space.") + key, label, editor, tip), kinds, list};
  fields_.push_back(f);
  form::on_edited(editor, this, [this, f] { onFieldEdited(f); });
}

QString SearchSpaceEditor::kind() const { return kind_->currentData().toString(); }

void SearchSpaceEditor::load() {
  if (writing_) return;
  QScopedValueRollback<bool> loading(loading_, true);
  json_->load();
  const auto& doc = job_->document();
  auto it = doc.find("search_space");
  const bool none = it == doc.end() || it->is_null();
  const nlohmann::json space = none || !it->is_object() ? nlohmann::json::object() : *it;
  QString k;
  if (!none) k = space.contains("builtin") ? QString::fromStdString(space["builtin"].is_string() ? space["builtin"].get<std::string>() : space["builtin"].dump()) : kCustom;
  int i = kind_->findData(k);
  if (i < 0) {  // a name the parser does not know: shown, and its error under it
    kind_->addItem(k, k);
    i = kind_->count() - 1;
  }
  kind_->setCurrentIndex(i);
  for (const auto& f : fields_) {
    auto v = space.find(f.key.toStdString());
    form::set_value(f.row.editor, v == space.end() ? QVariant() : JobModel::fromJson(*v));
  }
  auto layers = space.find("layers");
  layers_->setLayers(layers == space.end() ? nlohmann::json::array() : *layers);
  updateVisibility();
}

void SearchSpaceEditor::updateVisibility() {
  const QString k = kind();
  for (const auto& f : fields_) f.row.setVisible(!k.isEmpty() && (f.kinds.isEmpty() || f.kinds.contains(k)));
  layers_box_->setVisible(k == kCustom);
}

void SearchSpaceEditor::writeSpace(const nlohmann::json& space) {
  auto doc = job_->document();
  if (space.is_null()) doc.erase("search_space");
  else doc["search_space"] = space;
  if (doc == job_->document()) return;
  {
    QScopedValueRollback<bool> writing(writing_, true);
    job_->setDocument(doc);
  }
  json_->load();
}

void SearchSpaceEditor::onFieldEdited(const Field& f) {
  if (loading_) return;
  auto it = job_->document().find("search_space");
  nlohmann::json space = it != job_->document().end() && it->is_object() ? *it : nlohmann::json::object();
  const QVariant v = form::value(f.row.editor, f.list);
  if (v.isValid()) space[f.key.toStdString()] = JobModel::toJson(v);
  else space.erase(f.key.toStdString());
  writeSpace(space);
}

void SearchSpaceEditor::writeLayers() {
  auto it = job_->document().find("search_space");
  nlohmann::json space = it != job_->document().end() && it->is_object() ? *it : nlohmann::json::object();
  space["layers"] = layers_->layers();
  writeSpace(space);
}

void SearchSpaceEditor::onKindPicked() {
  const QString k = kind();
  auto it = job_->document().find("search_space");
  const bool had = it != job_->document().end() && !it->is_null();
  if (k.isEmpty()) {
    if (had) stash_ = *it;
    writeSpace(nullptr);
  } else {
    // Back from "none": the space set aside, if it is of this kind.
    nlohmann::json space = had && it->is_object() ? *it : stash_.value_or(nlohmann::json::object());
    if (!space.is_object()) space = nlohmann::json::object();
    // Keys of the other kinds go (the parser would reject them); the
    // common and unknown ones stay.
    for (const auto& f : fields_)
      if (!f.kinds.isEmpty() && !f.kinds.contains(k)) space.erase(f.key.toStdString());
    const bool was_custom = space.contains("layers") && !space.contains("builtin");
    if (k == kCustom) {
      space.erase("builtin");
      if (!was_custom) {
        SearchSpaceLayersModel starter;
        starter.addLayer();
        space["layers"] = starter.layers();
      }
    } else {
      space.erase("layers");
      space["builtin"] = k.toStdString();
    }
    writeSpace(space);
  }
  QScopedValueRollback<bool> loading(loading_, true);
  auto now = job_->document().find("search_space");
  layers_->setLayers(now != job_->document().end() && now->contains("layers") ? (*now)["layers"] : nlohmann::json::array());
  updateVisibility();
}

const SearchSpaceEditor::Field* SearchSpaceEditor::fieldFor(const QString& path) const {
  for (const auto& f : fields_)
    if (path == QStringLiteral("search_space.") + f.key) return &f;
  return nullptr;
}

QWidget* SearchSpaceEditor::editorFor(const QString& path) const {
  if (path == QLatin1String("search_space") || path == QLatin1String("search_space.builtin")) return kind_;
  if (path == QLatin1String("search_space.layers")) return table_;
  const Field* f = fieldFor(path);
  return f ? f->row.editor : nullptr;
}

QLabel* SearchSpaceEditor::errorLabelFor(const QString& path) const {
  if (path == QLatin1String("search_space") || path == QLatin1String("search_space.builtin")) return kind_row_.error;
  if (path == QLatin1String("search_space.layers")) return table_error_;
  const Field* f = fieldFor(path);
  return f ? f->row.error : nullptr;
}

QString SearchSpaceEditor::generalError() const { return general_error_->isVisible() ? general_error_->text() : QString(); }

QList<JobModel::FieldError> SearchSpaceEditor::showErrors(const QList<JobModel::FieldError>& errors) {
  QList<JobModel::FieldError> rest;
  QMap<QLabel*, QStringList> at;
  QStringList general;
  layers_->clearErrors();
  const bool structured = !json_toggle_->isChecked();
  const QString layers_path = QStringLiteral("search_space.layers");
  for (const auto& e : errors) {
    if (e.path != QLatin1String("search_space") && !e.path.startsWith(QLatin1String("search_space."))) {
      rest << e;
      continue;
    }
    if (structured && e.path.startsWith(layers_path + '[') && layers_box_->isVisible()) {
      // At the cell, and listed under the table so it reads without hovering.
      const QString inner = e.path.mid(layers_path.size());
      if (layers_->setError(inner, e.message)) {
        at[table_error_] << QStringLiteral("layers%1: %2").arg(inner, e.message);
        continue;
      }
    }
    const QString key = e.path.left(e.path.indexOf('['));  // search_space.kernels[1]
    QLabel* label = structured ? errorLabelFor(key) : nullptr;
    if (label && (label == kind_row_.error || label->parentWidget()->isVisibleTo(this) || label == table_error_)) {
      at[label] << (e.path == key ? e.message : e.path.mid(key.size()) + ": " + e.message);
    } else {
      general << QStringLiteral("%1: %2").arg(e.path, e.message) + (structured ? tr(" (Edit as JSON)") : QString());
    }
  }
  kind_row_.showError(at.value(kind_row_.error).join('\n'));
  for (const auto& f : fields_) f.row.showError(at.value(f.row.error).join('\n'));
  table_error_->setText(at.value(table_error_).join('\n'));
  table_error_->setVisible(at.contains(table_error_));
  general_error_->setText(general.join('\n'));
  general_error_->setVisible(!general.isEmpty());
  return rest;
}

}  // namespace pw::gui
