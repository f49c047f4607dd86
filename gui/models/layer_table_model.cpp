#include "gui/models/layer_table_model.h"

#include <QLocale>

namespace pw::gui {

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setRows(std::vector<Row> rows, const QString& source) {
  beginResetModel();
  rows_ = std::move(rows);
  source_ = source;
  endResetModel();
}

std::vector<LayerTableModel::Row> LayerTableModel::rowsFromProfile(const ModelProfile& p, int bytes_per_param) {
  std::vector<Row> rows;
  rows.reserve(p.layers.size());
  for (const auto& l : p.layers)
    rows.push_back({QString::fromStdString(l.name), QString::fromStdString(l.type),
                    static_cast<qint64>(l.param_bytes / std::max(1, bytes_per_param)), l.fwd_ms, l.bwd_ms});
  return rows;
}

void LayerTableModel::applyProfile(const ModelProfile& p, const QString& source, int bytes_per_param) {
  if (rows_.empty()) return setRows(rowsFromProfile(p, bytes_per_param), source);
  for (auto& r : rows_)
    for (const auto& l : p.layers)
      if (QString::fromStdString(l.name) == r.name) {
        r.fwd_ms = l.fwd_ms;
        r.bwd_ms = l.bwd_ms;
        if (r.params < 0) r.params = static_cast<qint64>(l.param_bytes / std::max(1, bytes_per_param));
      }
  source_ = source;
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int LayerTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& r = rows_[index.row()];
  const bool number = index.column() >= Params;
  if (role == Qt::TextAlignmentRole) return number ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
  if (role == Qt::UserRole) {  // raw values (tests, sorting)
    switch (index.column()) {
      case Name: return r.name;
      case Type: return r.type;
      case Params: return r.params;
      case ForwardMs: return r.fwd_ms ? QVariant(*r.fwd_ms) : QVariant();
      case BackwardMs: return r.bwd_ms ? QVariant(*r.bwd_ms) : QVariant();
    }
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Name: return r.name;
    case Type: return r.type;
    case Params: return r.params < 0 ? QStringLiteral("?") : QLocale().toString(r.params);
    case ForwardMs: return r.fwd_ms ? QString::number(*r.fwd_ms, 'f', 3) : QStringLiteral("—");
    case BackwardMs: return r.bwd_ms ? QString::number(*r.bwd_ms, 'f', 3) : QStringLiteral("—");
  }
  return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return tr("Layer");
    case Type: return tr("Type");
    case Params: return tr("Parameters");
    case ForwardMs: return tr("Forward ms");
    case BackwardMs: return tr("Backward ms");
  }
  return {};
}

}  // namespace pw::gui
