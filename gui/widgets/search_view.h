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
  // Reads the searches of a run database on a worker thread (never on the
  // GUI thread), then fills the search picker (the latest evolution search
  // shown) and emits loaded(true); loaded(false) with the reason in the
  // status line. A newer open supersedes one still reading.
  void openDatabase(const QString& path);
  void openComparison(const QString& path);  // its latest evolution search's front
  void selectRow(int row);
  int selectedRow() const { return selected_; }
  QString exportCommand() const;

 signals:
  void loaded(bool ok);

 private:
  void load(const QString& path, bool comparison);
  bool showDatabase(const QString& path, std::vector<SearchRun> runs, const QString& error);
  bool showComparison(const QString& path, const std::vector<SearchRun>& runs, const QString& error);
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
  int ticket_ = 0;  // the latest open; older reads are dropped when they finish
};

}  // namespace pw::gui
