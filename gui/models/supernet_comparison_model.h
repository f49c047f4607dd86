#pragma once
#include "gui/models/outcome_table_model.h"
#include "gui/models/supernet_prediction.h"

namespace pw::gui {

// One row per supernet mode of a SupernetPrediction, the job's own mode
// first: the designer's side-by-side table for a supernet job, which the
// planners do not plan (PlannerComparisonModel would stay empty).
// setPrediction takes a copy: hand it one without the timeline's events.
class SupernetComparisonModel : public OutcomeTableModel<SupernetComparisonModel, SupernetPrediction> {
  Q_OBJECT
 public:
  enum Column { Mode, SubnetsPerS, Time, Utilisation, Resident, PeakMemory, Status, ColumnCount };
  using OutcomeTableModel::OutcomeTableModel;

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
};

// The most any stage held of candidates at once (0 when the mode failed).
double peak_candidate_bytes(const SupernetOutcome& o);
// "fits" / "over budget", then "not reproducible" where the mode is; the
// mode's error when it failed. Shared by the table and the partition rows.
QString supernet_status(const SupernetOutcome& o, double budget_bytes);

}  // namespace pw::gui
