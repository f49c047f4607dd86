#pragma once
#include <QWidget>
#include <vector>

#include "gui/models/search_model.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QTableView;

namespace pw::gui {

// The Search tab (issue 23): a searched supernet run's subnets as accuracy
// against predicted latency, its Pareto front drawn as a line, a second
// run's front for comparison. Clicking a point (or a table row) selects
// that subnet: its figures and the export-subnet command to ship it.
class SearchView : public QWidget {
  Q_OBJECT
 public:
  explicit SearchView(QWidget* parent = nullptr);
  SearchModel* model() const { return model_; }
  QCustomPlot* plot() const { return plot_; }
  // Reads the searches of a run database into the search picker (the
  // latest evolution search shown); false with the reason in the status line.
  bool openDatabase(const QString& path);
  bool openComparison(const QString& path);  // its latest evolution search's front
  void selectRow(int row);
  int selectedRow() const { return selected_; }
  QString exportCommand() const;

 private:
  void showSearch(int index);
  void refresh();
  void fitAxes();
  SearchModel* model_;
  std::vector<SearchRun> searches_;  // of the opened database, for the picker
  QComboBox* picker_;
  QCustomPlot* plot_;
  QTableView* table_;
  QLabel* selection_;
  QLineEdit* command_;
  int selected_ = -1;
};

}  // namespace pw::gui
