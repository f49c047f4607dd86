#pragma once
#include <QAbstractTableModel>
#include <QString>
#include <optional>
#include <vector>

#include "core/model/layer_profile.h"

namespace pw::gui {

// The designer's layer table: one row per pipeline layer with its name,
// type, parameter count and, once known, its costs. Rows come from the
// job's profile (analytic or measured) or, for a TorchScript model not yet
// profiled, from the file's children (no costs yet).
class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Type, Params, ForwardMs, BackwardMs, ColumnCount };
  struct Row {
    QString name, type;
    qint64 params = -1;         // parameter elements; -1 unknown
    std::optional<double> fwd_ms, bwd_ms;  // unset until profiled
  };

  explicit LayerTableModel(QObject* parent = nullptr);

  void setRows(std::vector<Row> rows, const QString& source);
  // Costs of a profile for the rows of the same names (a measured profile
  // of the TorchScript children); rows it lacks keep theirs. `bytes_per_param`
  // turns param_bytes into a count where the rows have none.
  void applyProfile(const ModelProfile& profile, const QString& source, int bytes_per_param = 4);
  static std::vector<Row> rowsFromProfile(const ModelProfile& profile, int bytes_per_param);

  const std::vector<Row>& rows() const { return rows_; }
  QString source() const { return source_; }  // "analytic", "measured", "torchscript: file"

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Row> rows_;
  QString source_;
};

}  // namespace pw::gui
