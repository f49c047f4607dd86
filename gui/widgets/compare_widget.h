#pragma once
#include <QWidget>

class QLabel;

namespace pw::gui {

class RunFeeder;
class RunModel;
class RunSource;
class ThroughputView;
class TimelineView;

// Two runs side by side: throughput overlaid, and the two timelines one
// above the other with their time axes locked together, both measured
// from each run's start. Run A is the monitor's run; run B is loaded here.
class CompareWidget : public QWidget {
  Q_OBJECT
 public:
  CompareWidget(const RunModel* a, QWidget* parent = nullptr);
  ~CompareWidget() override;
  // Takes ownership; starts it.
  void loadSecond(RunSource* source);
  RunModel* second() const { return b_; }
  RunFeeder* secondFeeder() const { return feeder_; }
  TimelineView* timelineA() const { return ta_; }
  TimelineView* timelineB() const { return tb_; }
  ThroughputView* throughput() const { return tp_; }
  QString summary() const;

 private:
  void refresh();
  const RunModel* a_;
  RunModel* b_;
  RunFeeder* feeder_;
  RunSource* source_ = nullptr;
  ThroughputView* tp_;
  TimelineView* ta_;
  TimelineView* tb_;
  QLabel* summary_;
  bool syncing_ = false;
};

}  // namespace pw::gui
