#pragma once
#include <QObject>
#include <QString>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "gui/models/run_batch.h"

namespace pw::gui {

// Where a run's records come from (simulator, run database, live engine).
// The producing side runs on its own worker thread and publishes batches;
// the GUI thread takes them (RunFeeder, on a timer) and appends them to a
// RunModel. Nothing here ever blocks the GUI thread for longer than a
// mutex swap.
class RunSource : public QObject {
  Q_OBJECT
 public:
  explicit RunSource(QObject* parent = nullptr);
  ~RunSource() override;  // derived classes call stop() in their destructor

  void start();
  // Asks the worker to stop and joins it. Implementations must notice
  // stopRequested() within ~100 ms.
  void stop();
  bool isRunning() const { return running_.load(); }

  // Everything published since the last call (GUI thread).
  std::vector<RunBatch> take();
  virtual QString description() const = 0;

  // Control of a live run; no-ops where the source cannot do it.
  virtual bool canControl() const { return false; }
  virtual void pause() {}
  virtual void resume() {}
  virtual void requestStop() {}
  virtual void rebalance() {}

 signals:
  void finished();                 // the worker returned
  void failed(const QString& why);  // the worker gave up (bad file, dead engine)
  void status(const QString& text);

 protected:
  virtual void run() = 0;  // the worker thread's body
  bool stopRequested() const { return stop_.load(std::memory_order_relaxed); }
  void publish(RunBatch&& batch);

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::mutex mu_;
  std::vector<RunBatch> pending_;
  std::thread thread_;
};

}  // namespace pw::gui
