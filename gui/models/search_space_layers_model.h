#pragma once
#include <QAbstractTableModel>
#include <QMap>
#include <QPair>
#include <nlohmann/json.hpp>
#include <vector>

namespace pw::gui {

// A custom search space's choice layers (search_space.layers) as a table:
// one row per candidate op, grouped by layer (a layer without candidates
// still has a row). The layer's name and repeat show on its first row. The
// model edits the JSON array in place, so keys it has no column for (a
// uniform candidate's costs, anything unknown) are kept; they show,
// read-only, in the Other column. A cell set to 0 or empty removes its key
// (the parser's default applies).
class SearchSpaceLayersModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Layer, Repeat, Op, Kernel, Heads, Other, ColumnCount };
  static constexpr int ErrorRole = Qt::UserRole;  // the parser's message for the cell (also its tooltip)

  explicit SearchSpaceLayersModel(QObject* parent = nullptr);

  // Resets the table, unless `layers` is what it holds already (so the
  // document written back after an edit does not reset the view).
  void setLayers(const nlohmann::json& layers);
  const nlohmann::json& layers() const { return layers_; }

  int layerOf(int row) const;
  int candidateOf(int row) const;  // -1: the row of a layer without candidates
  int rowOf(int layer, int candidate = 0) const;

  // Appends a layer / a candidate to `layer` (a copy of the last one there
  // is, else the first op of the parser's list), or removes one. Each emits
  // edited().
  void addLayer();
  void removeLayer(int layer);
  void addCandidate(int layer);
  void removeCandidate(int layer, int candidate);

  // A parser error inside search_space.layers, its path relative to it
  // ("[1].candidates[0].kernel"), at the cell it names (ErrorRole and the
  // tooltip; the view paints it red). False if the path names no row of the table.
  bool setError(const QString& path, const QString& message);
  void clearErrors();
  QString errorAt(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 signals:
  void edited();  // the user changed layers()

 private:
  void rebuildRows();
  void changeLayers(const std::function<void()>& change);  // reset + edited()
  nlohmann::json* objectAt(int row, int column);
  const nlohmann::json* objectAt(int row, int column) const;
  nlohmann::json newCandidate(int layer) const;

  nlohmann::json layers_ = nlohmann::json::array();
  std::vector<QPair<int, int>> rows_;  // (layer, candidate or -1)
  QMap<QPair<int, int>, QString> errors_;  // (row, column) -> message
};

}  // namespace pw::gui
