#pragma once
#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QTimer>

namespace pw::gui {

class RunModel;
class RunSource;

// Moves what a source's worker published into the model, on a GUI-thread
// timer: the model (and so every view) changes at most once per tick,
// whatever the event rate.
class RunFeeder : public QObject {
  Q_OBJECT
 public:
  RunFeeder(RunModel* model, QObject* parent = nullptr);
  void setSource(RunSource* source);  // not owned; null detaches
  RunSource* source() const { return source_; }
  void setInterval(int ms) { timer_.setInterval(ms); }
  // Drains the source now (tests; the end of a run).
  int drain();
  // Events per second over the last second of ingestion.
  double eventsPerSecond() const { return rate_; }
  // Longest time one drain took on the GUI thread, in ms.
  double maxDrainMs() const { return max_drain_ms_; }

 signals:
  void ingested(int events);

 private:
  RunModel* model_;
  QPointer<RunSource> source_;
  QTimer timer_;
  QElapsedTimer window_;
  qint64 window_events_ = 0;
  double rate_ = 0;
  double max_drain_ms_ = 0;
};

}  // namespace pw::gui
