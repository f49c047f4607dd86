#pragma once
#include <QFont>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace pw::gui {

class RunModel;

// Which layers each stage holds, one horizontal bar per plan: a cell per
// layer coloured by its memory policy (keep / recompute / swap), stage
// boundaries drawn across. Used for the plan in force (monitor: it follows
// the replay cursor) and for the designer's planner comparison.
class PlanView : public QWidget {
  Q_OBJECT
 public:
  struct Row {
    QString label;
    Plan plan;
    QString note;  // under the bar: throughput, "infeasible: ..."
  };
  explicit PlanView(QWidget* parent = nullptr);
  void setRows(std::vector<Row> rows);
  void setLayerNames(std::vector<std::string> names) { names_ = std::move(names); }
  // Monitor mode: shows the plan at the cursor and the one before it.
  void setRun(const RunModel* run);
  void setCursor(qint64 t_ns);
  const std::vector<Row>& rows() const { return rows_; }
  // A stage's label on a row's bar, where it is drawn (widget pixels):
  // centred on its stage's box, inside it where it fits, never within
  // 2 x kLabelPadPx of another label.
  struct StageLabel {
    int stage;
    QString text;
    QRectF rect;
  };
  static constexpr int kLabelPadPx = 2;
  std::vector<StageLabel> stageLabels(int row) const;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent* e) override;

 private:
  void syncFromRun();
  QRectF barRect(int row) const;
  QFont labelFont() const;
  std::vector<Row> rows_;
  std::vector<std::string> names_;
  const RunModel* run_ = nullptr;
  qint64 cursor_ = INT64_MAX;
};

}  // namespace pw::gui
