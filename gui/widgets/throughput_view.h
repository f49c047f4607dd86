#pragma once
#include <QColor>
#include <QPointer>
#include <QWidget>

class QCustomPlot;
class QCPItemRect;
class QCPItemText;

namespace pw::gui {

class RunModel;

// Samples/s over time (ms since each run's start) for one run, or several
// overlaid (Compare). Redrawn from the model's throughput series on change.
class ThroughputView : public QWidget {
  Q_OBJECT
 public:
  explicit ThroughputView(QWidget* parent = nullptr);
  void setRun(const RunModel* run);  // replaces all runs
  void addRun(const RunModel* run, const QString& label, const QColor& color);
  void setCursor(qint64 t_ns);  // shades the future of the first run
  QCustomPlot* plot() const { return plot_; }
  // The first run's latest figure in words (or why there is none).
  QCPItemText* figure() const { return figure_; }

 private:
  struct Series {
    QPointer<const RunModel> run;
    QString label;
    QColor color;
  };
  void refresh();
  std::vector<Series> runs_;
  QCustomPlot* plot_;
  QCPItemRect* future_;
  QCPItemText* figure_;
  qint64 cursor_ = INT64_MAX;
};

}  // namespace pw::gui
