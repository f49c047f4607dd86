#pragma once
#include <QObject>
#include <QString>
#include <vector>

class QCPAxis;

namespace pw::gui {

// Labels the stages 0..n-1 of an axis (the Explain dock's bars, the
// timeline's lanes) with as many labels as fit without overlapping, at any
// stage count: "stage s" under every stage where that fits, else the bare
// numbers with the axis titled "stage", every k-th one (k = 1, 2, 4, 5, 8,
// 10, 16, ...) as the axis' length allows. Recomputed before every replot,
// so a resize or a new stage count relabels.
class StageLabels : public QObject {
  Q_OBJECT
 public:
  explicit StageLabels(QCPAxis* axis);
  void setCount(int stages);
  int count() const { return count_; }
  int step() const { return step_; }
  bool longLabels() const { return long_; }

  // The labels as the axis will place them: the text's box in pixels
  // (its centre on the tick), for tests and for callers that draw beside them.
  struct Placed {
    int stage;
    QString text;
    double center_px;
    double extent_px;  // width (horizontal axis) or height (vertical)
  };
  std::vector<Placed> placed() const;

  // Clearance between neighbouring labels, in pixels.
  static constexpr int kGapPx = 6;

 private:
  void relayout();
  QCPAxis* axis_;
  int count_ = 0, step_ = 0;
  bool long_ = false;
  double extent_ = -1;  // pixels per stage the labels were laid out for
};

}  // namespace pw::gui
