#include "gui/models/supernet_comparison_model.h"

#include <algorithm>

#include "gui/models/planner_comparison_model.h"

namespace pw::gui {

double peak_candidate_bytes(const SupernetOutcome& o) {
  if (!o.ok || o.result.peak_resident_bytes.empty()) return 0;
  return static_cast<double>(*std::max_element(o.result.peak_resident_bytes.begin(), o.result.peak_resident_bytes.end()));
}

QString supernet_status(const SupernetOutcome& o, double budget_bytes) {
  if (!o.ok) return QString::fromStdString(o.error);
  QString s = budget_bytes > 0 && peak_candidate_bytes(o) > budget_bytes ? SupernetComparisonModel::tr("over budget")
                                                                         : SupernetComparisonModel::tr("fits");
  if (!o.result.reproducible) s += SupernetComparisonModel::tr(", not reproducible");
  return s;
}

QVariant SupernetComparisonModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Time: return tr("Time to train the job's subnets");
      case Utilisation: return tr("Compute busy time over stages x time");
      case Resident: return tr("Uses of a candidate that found it already resident on its stage");
      case PeakMemory: return tr("Most candidate memory any stage held, against the per-stage budget");
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Mode: return tr("Mode");
    case SubnetsPerS: return tr("Subnets/s");
    case Time: return tr("Time");
    case Utilisation: return tr("Utilisation");
    case Resident: return tr("Resident");
    case PeakMemory: return tr("Peak candidates");
    case Status: return tr("Status");
  }
  return {};
}

QVariant SupernetComparisonModel::data(const QModelIndex& index, int role) const {
  const SupernetOutcome* outcome = outcomeAt(index);
  if (!outcome) return {};
  const SupernetOutcome& o = *outcome;
  const auto& r = o.result;
  if (role == Qt::DisplayRole) {
    if (index.column() == Mode) return QString::fromStdString(o.mode) + (index.row() == 0 ? tr(" (job's)") : QString());
    if (index.column() == Status) return supernet_status(o, p_.budget_bytes);
    if (!o.ok) return QString();
    switch (index.column()) {
      case SubnetsPerS: return QString::number(r.subnets_per_s, 'f', 2);
      case Time: return format_duration_ns(r.makespan_ms * 1e6);
      case Utilisation: return QStringLiteral("%1%").arg(100 * r.utilisation, 0, 'f', 1);
      case Resident: return QStringLiteral("%1%").arg(100 * r.hit_rate(), 0, 'f', 1);
      case PeakMemory:
        return p_.budget_bytes > 0 ? tr("%1 of %2").arg(format_bytes(peak_candidate_bytes(o)), format_bytes(p_.budget_bytes))
                                   : format_bytes(peak_candidate_bytes(o));
    }
  } else if (role == Qt::UserRole) {  // raw values, as the planners' table gives
    switch (index.column()) {
      case SubnetsPerS: return r.subnets_per_s;
      case Time: return r.makespan_ms;
      case Utilisation: return r.utilisation;
      case Resident: return r.hit_rate();
      case PeakMemory: return peak_candidate_bytes(o);
      default: return data(index, Qt::DisplayRole);
    }
  } else if (role == Qt::ToolTipRole && index.column() == Status) {
    if (o.ok && !r.reproducible)
      return tr("Asynchronous across subnets: nothing orders the shared layers, so a later subnet can read a layer "
                "before an earlier one has updated it, and a rerun does not repeat the search.");
    return data(index, Qt::DisplayRole);
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() >= SubnetsPerS && index.column() <= PeakMemory)
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace pw::gui
