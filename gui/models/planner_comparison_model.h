#pragma once
#include <QAbstractTableModel>

#include "gui/models/prediction.h"

namespace pw::gui {

// One row per planner of a Prediction: the designer's side-by-side table.
class PlannerComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Planner, Throughput, IterationMs, Bubble, PeakMemory, Partition, Status, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  void setPrediction(const Prediction& p);
  const Prediction& prediction() const { return p_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  Prediction p_;
};

// "0-5 | 6-11 | ..." for a plan's stages.
QString partition_text(const Plan& plan);
QString format_bytes(double bytes);
QString format_duration_ns(double ns);

}  // namespace pw::gui
