#include "gui/models/search_space_layers_model.h"

#include <QRegularExpression>

#include "gui/models/nas_core.h"
#include "gui/models/job_model.h"

namespace pw::gui {
namespace {

const char* column_key(int column) {
  switch (column) {
    case SearchSpaceLayersModel::Layer: return "name";
    case SearchSpaceLayersModel::Repeat: return "repeat";
    case SearchSpaceLayersModel::Op: return "op";
    case SearchSpaceLayersModel::Kernel: return "kernel";
    case SearchSpaceLayersModel::Heads: return "heads";
    default: return nullptr;
  }
}

bool is_layer_column(int column) { return column == SearchSpaceLayersModel::Layer || column == SearchSpaceLayersModel::Repeat; }

const nlohmann::json* candidates_of(const nlohmann::json& layer) {
  if (!layer.is_object()) return nullptr;
  auto it = layer.find("candidates");
  return it != layer.end() && it->is_array() ? &*it : nullptr;
}

}  // namespace

SearchSpaceLayersModel::SearchSpaceLayersModel(QObject* parent) : QAbstractTableModel(parent) {}

void SearchSpaceLayersModel::setLayers(const nlohmann::json& layers) {
  if (layers == layers_) return;
  beginResetModel();
  layers_ = layers;
  errors_.clear();
  rebuildRows();
  endResetModel();
}

void SearchSpaceLayersModel::rebuildRows() {
  rows_.clear();
  if (!layers_.is_array()) return;
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) {
    const auto* c = candidates_of(layers_[l]);
    const int n = c ? static_cast<int>(c->size()) : 0;
    if (n == 0) rows_.push_back({l, -1});
    for (int i = 0; i < n; ++i) rows_.push_back({l, i});
  }
}

int SearchSpaceLayersModel::layerOf(int row) const { return row >= 0 && row < rowCount() ? rows_[row].first : -1; }
int SearchSpaceLayersModel::candidateOf(int row) const { return row >= 0 && row < rowCount() ? rows_[row].second : -1; }

int SearchSpaceLayersModel::rowOf(int layer, int candidate) const {
  int first = -1;
  for (int r = 0; r < rowCount(); ++r) {
    if (rows_[r].first != layer) continue;
    if (first < 0) first = r;
    if (rows_[r].second == candidate) return r;
  }
  return candidate <= 0 ? first : -1;
}

nlohmann::json* SearchSpaceLayersModel::objectAt(int row, int column) {
  return const_cast<nlohmann::json*>(static_cast<const SearchSpaceLayersModel*>(this)->objectAt(row, column));
}

// The JSON object a cell edits: its layer for name and repeat (first row
// only), its candidate for the rest.
const nlohmann::json* SearchSpaceLayersModel::objectAt(int row, int column) const {
  if (row < 0 || row >= rowCount()) return nullptr;
  const auto [l, c] = rows_[row];
  const nlohmann::json& layer = layers_[l];
  if (is_layer_column(column)) return rowOf(l) == row && layer.is_object() ? &layer : nullptr;
  const auto* cands = candidates_of(layer);
  if (c < 0 || !cands || !(*cands)[c].is_object()) return nullptr;
  return &(*cands)[c];
}

int SearchSpaceLayersModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SearchSpaceLayersModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SearchSpaceLayersModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const int row = index.row(), col = index.column();
  if (role == Qt::ToolTipRole || role == ErrorRole) {
    auto it = errors_.find({row, col});
    return it == errors_.end() ? QVariant() : QVariant(*it);
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const nlohmann::json* obj = objectAt(row, col);
  if (col == Other) {
    // What the columns do not show: the rest of the candidate (or of a
    // layer or candidate that is not an object at all).
    const auto [l, c] = rows_[row];
    const auto* cands = candidates_of(layers_[l]);
    const nlohmann::json* cand = c >= 0 && cands ? &(*cands)[c] : nullptr;
    if (!layers_[l].is_object()) return QString::fromStdString(layers_[l].dump());
    if (cand && !cand->is_object()) return QString::fromStdString(cand->dump());
    QStringList rest;
    if (cand)
      for (auto it = cand->begin(); it != cand->end(); ++it)
        if (it.key() != "op" && it.key() != "kernel" && it.key() != "heads")
          rest << QString::fromStdString(it.key() + ": " + it.value().dump());
    if (rowOf(l) == row)
      for (auto it = layers_[l].begin(); it != layers_[l].end(); ++it)
        if (it.key() != "name" && it.key() != "repeat" && it.key() != "candidates")
          rest << QString::fromStdString(it.key() + ": " + it.value().dump());
    return rest.join(QStringLiteral(", "));
  }
  if (!obj) return {};
  auto it = obj->find(column_key(col));
  if (it == obj->end()) return role == Qt::EditRole && col != Layer && col != Op ? QVariant(0) : QVariant();
  return JobModel::fromJson(*it);
}

bool SearchSpaceLayersModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole) return false;
  nlohmann::json* obj = objectAt(index.row(), index.column());
  const char* key = column_key(index.column());
  if (!obj || !key) return false;
  const bool unset = !value.isValid() || value.toString().trimmed().isEmpty() ||
                     (index.column() != Layer && index.column() != Op && value.toString().trimmed() == QLatin1String("0"));
  nlohmann::json was = *obj;
  if (unset) {
    obj->erase(key);
  } else if (index.column() == Layer || index.column() == Op) {
    (*obj)[key] = value.toString().trimmed().toStdString();
  } else {
    bool ok = false;
    const long long n = value.toString().trimmed().toLongLong(&ok);
    (*obj)[key] = ok ? nlohmann::json(n) : nlohmann::json(value.toString().trimmed().toStdString());  // the parser says why not
  }
  if (*obj == was) return true;
  errors_.remove({index.row(), index.column()});
  emit dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
  emit edited();
  return true;
}

Qt::ItemFlags SearchSpaceLayersModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() != Other && objectAt(index.row(), index.column())) f |= Qt::ItemIsEditable;
  return f;
}

QVariant SearchSpaceLayersModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Layer: return tr("Layer");
    case Repeat: return tr("Repeat");
    case Op: return tr("Op");
    case Kernel: return tr("Kernel");
    case Heads: return tr("Heads");
    case Other: return tr("Other");
    default: return {};
  }
}

void SearchSpaceLayersModel::changeLayers(const std::function<void()>& change) {
  beginResetModel();
  if (!layers_.is_array()) layers_ = nlohmann::json::array();
  change();
  errors_.clear();  // the rows moved; the next validation places them again
  rebuildRows();
  endResetModel();
  emit edited();
}

nlohmann::json SearchSpaceLayersModel::newCandidate(int layer) const {
  for (int l = layer; l >= 0; --l) {
    const auto* c = layers_.is_array() && l < static_cast<int>(layers_.size()) ? candidates_of(layers_[l]) : nullptr;
    if (c && !c->empty()) return c->back();
  }
  return {{"op", nas::search_space_names().ops.front()}};
}

void SearchSpaceLayersModel::addLayer() {
  changeLayers([this] {
    const int n = static_cast<int>(layers_.size());
    layers_.push_back({{"name", "layer" + std::to_string(n)}, {"candidates", {newCandidate(n - 1)}}});
  });
}

void SearchSpaceLayersModel::removeLayer(int layer) {
  if (!layers_.is_array() || layer < 0 || layer >= static_cast<int>(layers_.size())) return;
  changeLayers([&] { layers_.erase(layers_.begin() + layer); });
}

void SearchSpaceLayersModel::addCandidate(int layer) {
  if (!layers_.is_array() || layer < 0 || layer >= static_cast<int>(layers_.size()) || !layers_[layer].is_object()) return;
  changeLayers([&] {
    nlohmann::json c = newCandidate(layer);
    auto& cands = layers_[layer]["candidates"];
    if (!cands.is_array()) cands = nlohmann::json::array();
    cands.push_back(c);
  });
}

void SearchSpaceLayersModel::removeCandidate(int layer, int candidate) {
  if (!layers_.is_array() || layer < 0 || layer >= static_cast<int>(layers_.size())) return;
  const auto* cands = candidates_of(layers_[layer]);
  if (!cands || candidate < 0 || candidate >= static_cast<int>(cands->size())) return;
  changeLayers([&] { layers_[layer]["candidates"].erase(layers_[layer]["candidates"].begin() + candidate); });
}

bool SearchSpaceLayersModel::setError(const QString& path, const QString& message) {
  // "[l]", "[l].key", "[l].candidates", "[l].candidates[c]", "[l].candidates[c].key"
  static const QRegularExpression re(QStringLiteral(R"(^\[(\d+)\](?:\.candidates(?:\[(\d+)\])?|\.(\w+))?(?:\.(\w+))?)"));
  const auto m = re.match(path);
  if (!m.hasMatch()) return false;
  const int l = m.captured(1).toInt();
  const bool in_candidate = !m.captured(2).isEmpty();
  const int c = in_candidate ? m.captured(2).toInt() : 0;
  const QString key = in_candidate ? m.captured(4) : m.captured(3);
  int row = rowOf(l, c);
  if (row < 0) row = rowOf(l);
  if (row < 0) return false;
  int col = Other;
  for (int k = Layer; k < Other; ++k)
    if (key == QLatin1String(column_key(k)) && is_layer_column(k) != in_candidate) col = k;
  if (key.isEmpty()) col = in_candidate || path.contains(QLatin1String(".candidates")) ? Op : Layer;
  QString& slot = errors_[{row, col}];
  slot = slot.isEmpty() ? message : slot + '\n' + message;
  emit dataChanged(index(row, col), index(row, col), {Qt::ToolTipRole, ErrorRole});
  return true;
}

void SearchSpaceLayersModel::clearErrors() {
  if (errors_.isEmpty()) return;
  errors_.clear();
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::ToolTipRole, ErrorRole});
}

QString SearchSpaceLayersModel::errorAt(int row, int column) const { return errors_.value({row, column}); }

}  // namespace pw::gui
