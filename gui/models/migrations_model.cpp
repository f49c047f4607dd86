#include "gui/models/migrations_model.h"

#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"

namespace pw::gui {

MigrationsModel::MigrationsModel(const RunModel* run, QObject* parent) : QAbstractTableModel(parent), run_(run) {
  connect(run_, &RunModel::changed, this, &MigrationsModel::sync);
  connect(run_, &RunModel::reset, this, [this] {
    beginResetModel();
    rows_ = 0;
    endResetModel();
    sync();
  });
  sync();
}

void MigrationsModel::sync() {
  int n = static_cast<int>(run_->migrations().size());
  if (n > rows_) {
    beginInsertRows({}, rows_, n - 1);
    rows_ = n;
    endInsertRows();
  } else if (n < rows_) {
    beginResetModel();
    rows_ = n;
    endResetModel();
  }
}

void MigrationsModel::setCursor(qint64 t) {
  if (t == cursor_) return;
  cursor_ = t;
  if (rows_ > 0) emit dataChanged(index(0, 0), index(rows_ - 1, ColumnCount - 1));
}

int MigrationsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_; }
int MigrationsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant MigrationsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  switch (section) {
    case Start: return tr("Start");
    case Duration: return tr("Duration");
    case Layer: return tr("Layer");
    case Move: return tr("Stages");
    case Bytes: return tr("Bytes");
    case Plan: return tr("Plan");
  }
  return {};
}

Qt::ItemFlags MigrationsModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  const auto& m = run_->migrations()[index.row()];
  return m.start_ns <= cursor_ ? Qt::ItemIsEnabled | Qt::ItemIsSelectable : Qt::ItemIsSelectable;
}

QVariant MigrationsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_ || index.column() >= ColumnCount) return {};
  const auto& m = run_->migrations()[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Start: return format_duration_ns(static_cast<double>(m.start_ns - run_->beginNs()));
      case Duration: return format_duration_ns(static_cast<double>(m.end_ns - m.start_ns));
      case Layer: return m.layer;
      case Move: return QStringLiteral("%1 → %2").arg(m.from_stage).arg(m.to_stage);
      case Bytes: return format_bytes(static_cast<double>(m.bytes));
      case Plan: return m.plan_version >= 0 ? QVariant(m.plan_version) : QVariant(QStringLiteral("?"));
    }
  } else if (role == Qt::UserRole) {
    switch (index.column()) {
      case Start: return static_cast<qlonglong>(m.start_ns);
      case Duration: return static_cast<qlonglong>(m.end_ns - m.start_ns);
      case Bytes: return static_cast<qlonglong>(m.bytes);
      default: return data(index, Qt::DisplayRole);
    }
  }
  return {};
}

}  // namespace pw::gui
