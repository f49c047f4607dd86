#pragma once
#include <QAbstractTableModel>
#include <QPointF>
#include <QString>
#include <vector>

namespace pw::gui {

// One subnet a search scored (db::SearchSubnet, without the db layer).
struct SearchPoint {
  qint64 id = 0;  // search_subnets.id: what export-subnet --subnet takes
  std::vector<int> choices;
  double accuracy = 0;
  double latency_ms = 0;  // core's predicted latency (core/nas/subnet_cost.h)
  qint64 parameters = 0;
};

// A stored search of a recorded run: its points and where they came from.
struct SearchRun {
  QString db_path;  // the run database (for the export command)
  QString label;    // "fmnist-supernet, search 3 (evolution)"
  std::vector<SearchPoint> points;
};

// The Search view's data: one run's scored subnets as a table (one row per
// subnet, the front's marked), its accuracy / predicted-latency Pareto
// front (core/nas/pareto.h, recomputed here from the points) in plot
// order, a second run's front for comparison, and the selected subnet's
// export command.
class SearchModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Accuracy, Latency, Parameters, Front, Subnet, ColumnCount };
  explicit SearchModel(QObject* parent = nullptr);

  void setRun(SearchRun run);
  void setComparison(SearchRun run);  // empty points: no comparison
  void clear();
  const SearchRun& run() const { return run_; }
  const SearchRun& comparison() const { return cmp_; }

  bool onFront(int row) const { return row >= 0 && row < static_cast<int>(front_.size()) && front_[row]; }
  // (latency_ms, accuracy) of the front, by increasing latency.
  std::vector<QPointF> frontLine() const { return line(run_, front_); }
  std::vector<QPointF> comparisonFrontLine() const { return line(cmp_, cmp_front_); }
  // The row of the point nearest (latency, accuracy) when both axes are
  // scaled to [0, 1] over the points' ranges; -1 without points.
  int nearestRow(double latency_ms, double accuracy) const;
  // `pipewright export-subnet DB --subnet ID -o subnet-ID.pt` for the row.
  QString exportCommand(int row) const;
  QString describe(int row) const;  // the subnet, its figures and whether it is on the front

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 signals:
  void comparisonChanged();

 private:
  static std::vector<bool> front_of(const SearchRun& r);
  static std::vector<QPointF> line(const SearchRun& r, const std::vector<bool>& front);
  SearchRun run_, cmp_;
  std::vector<bool> front_, cmp_front_;
};

// "[0,5,6,2]"
QString choices_text(const std::vector<int>& choices);

}  // namespace pw::gui
