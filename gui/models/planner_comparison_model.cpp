#include "gui/models/planner_comparison_model.h"

#include <algorithm>

namespace pw::gui {

QString format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(b, 0, 'f', u == 0 ? 0 : (std::abs(b) < 10 ? 2 : 1)).arg(units[u]);
}

QString format_duration_ns(double ns) {
  double a = std::abs(ns);
  if (a >= 1e9) return QStringLiteral("%1 s").arg(ns / 1e9, 0, 'f', a >= 1e10 ? 1 : 3);
  if (a >= 1e6) return QStringLiteral("%1 ms").arg(ns / 1e6, 0, 'f', a >= 1e8 ? 1 : 3);
  if (a >= 1e3) return QStringLiteral("%1 us").arg(ns / 1e3, 0, 'f', 1);
  return QStringLiteral("%1 ns").arg(ns, 0, 'f', 0);
}

QString partition_text(const Plan& plan) {
  QStringList parts;
  for (const auto& s : plan.stages) parts << QStringLiteral("%1-%2").arg(s.first_layer).arg(s.last_layer);
  return parts.join(QStringLiteral(" | "));
}

QVariant PlannerComparisonModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  switch (section) {
    case Planner: return tr("Planner");
    case Throughput: return tr("Samples/s");
    case IterationMs: return tr("Iteration");
    case Bubble: return tr("Bubble");
    case PeakMemory: return tr("Peak memory");
    case Partition: return tr("Partition");
    case Status: return tr("Status");
  }
  return {};
}

QVariant PlannerComparisonModel::data(const QModelIndex& index, int role) const {
  const PlannerOutcome* outcome = outcomeAt(index);
  if (!outcome) return {};
  const PlannerOutcome& o = *outcome;
  const SimResult& r = o.iteration.result;
  std::uint64_t peak = 0;
  for (const auto& s : r.stages) peak = std::max(peak, s.peak_memory_bytes);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Planner: return QString::fromStdString(o.planner) + (index.row() == 0 ? tr(" (chosen)") : QString());
      case Throughput: return o.ok ? QString::number(r.throughput_samples_per_s, 'f', 1) : QString();
      case IterationMs: return o.ok ? format_duration_ns(r.iteration_time_ms * 1e6) : QString();
      case Bubble: return o.ok ? QStringLiteral("%1%").arg(100 * r.bubble_fraction, 0, 'f', 1) : QString();
      case PeakMemory: return o.ok ? format_bytes(static_cast<double>(peak)) : QString();
      case Partition: return o.ok ? partition_text(o.iteration.plan.plan) : QString();
      case Status:
        if (!o.ok) return QString::fromStdString(o.error);
        return r.feasible ? tr("fits") : QString::fromStdString(r.reason);
    }
  } else if (role == Qt::UserRole) {  // sortable raw values
    switch (index.column()) {
      case Throughput: return r.throughput_samples_per_s;
      case IterationMs: return r.iteration_time_ms;
      case Bubble: return r.bubble_fraction;
      case PeakMemory: return static_cast<qulonglong>(peak);
      default: return data(index, Qt::DisplayRole);
    }
  } else if (role == Qt::ToolTipRole && index.column() == Status) {
    return data(index, Qt::DisplayRole);
  } else if (role == Qt::TextAlignmentRole) {
    if (index.column() >= Throughput && index.column() <= PeakMemory)
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace pw::gui
