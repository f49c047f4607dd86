#pragma once
#include <QAbstractTableModel>

namespace pw::gui {

class RunModel;

// The run's layer migrations (one row per layer moved) as a table; rows are appended as the run reports
// them (live) and rows after the replay cursor are shown disabled.
class MigrationsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Start, Duration, Layer, Move, Bytes, Plan, ColumnCount };
  explicit MigrationsModel(const RunModel* run, QObject* parent = nullptr);

  void setCursor(qint64 t_ns);  // replay time; rows after it are greyed

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 private:
  void sync();
  const RunModel* run_;
  int rows_ = 0;
  qint64 cursor_ = INT64_MAX;
};

}  // namespace pw::gui
