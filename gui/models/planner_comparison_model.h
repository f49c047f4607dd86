#pragma once
#include "gui/models/outcome_table_model.h"
#include "gui/models/prediction.h"

namespace pw::gui {

// One row per planner of a Prediction: the designer's side-by-side table.
class PlannerComparisonModel : public OutcomeTableModel<PlannerComparisonModel, Prediction> {
  Q_OBJECT
 public:
  enum Column { Planner, Throughput, IterationMs, Bubble, PeakMemory, Partition, Status, ColumnCount };
  using OutcomeTableModel::OutcomeTableModel;

  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
};

// "0-5 | 6-11 | ..." for a plan's stages.
QString partition_text(const Plan& plan);
QString format_bytes(double bytes);
QString format_duration_ns(double ns);

}  // namespace pw::gui
