#include "gui/models/search_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/nas/pareto.h"

namespace pw::gui {

QString choices_text(const std::vector<int>& choices) {
  QStringList parts;
  for (int c : choices) parts << QString::number(c);
  return QLatin1Char('[') + parts.join(QLatin1Char(',')) + QLatin1Char(']');
}

SearchModel::SearchModel(QObject* parent) : QAbstractTableModel(parent) {}

std::vector<bool> SearchModel::front_of(const SearchRun& r) {
  std::vector<nas::TradeoffPoint> pts;
  for (const auto& p : r.points) pts.push_back({p.accuracy, p.latency_ms});
  return nas::pareto_front(pts);
}

std::vector<QPointF> SearchModel::line(const SearchRun& r, const std::vector<bool>& front) {
  std::vector<nas::TradeoffPoint> pts;
  for (const auto& p : r.points) pts.push_back({p.accuracy, p.latency_ms});
  std::vector<QPointF> out;
  for (int i : nas::pareto_order(pts, front)) out.emplace_back(r.points[i].latency_ms, r.points[i].accuracy);
  return out;
}

void SearchModel::setRun(SearchRun run) {
  beginResetModel();
  run_ = std::move(run);
  front_ = front_of(run_);
  endResetModel();
}

void SearchModel::setComparison(SearchRun run) {
  cmp_ = std::move(run);
  cmp_front_ = front_of(cmp_);
  emit comparisonChanged();
}

void SearchModel::clear() {
  setRun({});
  setComparison({});
}

int SearchModel::nearestRow(double latency_ms, double accuracy) const {
  if (run_.points.empty()) return -1;
  double l0 = std::numeric_limits<double>::max(), l1 = -l0, a0 = l0, a1 = -l0;
  for (const auto& p : run_.points) {
    l0 = std::min(l0, p.latency_ms);
    l1 = std::max(l1, p.latency_ms);
    a0 = std::min(a0, p.accuracy);
    a1 = std::max(a1, p.accuracy);
  }
  const double ls = l1 > l0 ? l1 - l0 : 1, as = a1 > a0 ? a1 - a0 : 1;
  int best = 0;
  double bd = std::numeric_limits<double>::max();
  for (int i = 0; i < static_cast<int>(run_.points.size()); ++i) {
    double dl = (run_.points[i].latency_ms - latency_ms) / ls, da = (run_.points[i].accuracy - accuracy) / as;
    double d = dl * dl + da * da;
    if (d < bd) {
      bd = d;
      best = i;
    }
  }
  return best;
}

QString SearchModel::exportCommand(int row) const {
  if (row < 0 || row >= rowCount()) return {};
  const auto& p = run_.points[row];
  return QStringLiteral("pipewright export-subnet %1 --subnet %2 -o subnet-%2.pt").arg(run_.db_path).arg(p.id);
}

QString SearchModel::describe(int row) const {
  if (row < 0 || row >= rowCount()) return tr("No subnet selected: click a point.");
  const auto& p = run_.points[row];
  return tr("Subnet %1 %2: accuracy %3, predicted latency %4 ms, %5 parameters%6")
      .arg(p.id)
      .arg(choices_text(p.choices))
      .arg(p.accuracy, 0, 'f', 4)
      .arg(p.latency_ms, 0, 'f', 4)
      .arg(p.parameters)
      .arg(onFront(row) ? tr(", on the Pareto front") : QString());
}

int SearchModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(run_.points.size());
}

int SearchModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SearchModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& p = run_.points[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Id: return p.id;
      case Accuracy: return QString::number(p.accuracy, 'f', 4);
      case Latency: return QString::number(p.latency_ms, 'f', 4);
      case Parameters: return p.parameters;
      case Front: return onFront(index.row()) ? tr("yes") : QString();
      case Subnet: return choices_text(p.choices);
    }
  }
  // Sorting by the numbers, not their text.
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case Id: return p.id;
      case Accuracy: return p.accuracy;
      case Latency: return p.latency_ms;
      case Parameters: return p.parameters;
      case Front: return onFront(index.row());
      case Subnet: return choices_text(p.choices);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Subnet && index.column() != Front)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant SearchModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Id: return tr("ID");
    case Accuracy: return tr("Accuracy");
    case Latency: return tr("Latency ms");
    case Parameters: return tr("Parameters");
    case Front: return tr("Front");
    case Subnet: return tr("Subnet");
  }
  return {};
}

}  // namespace pw::gui
