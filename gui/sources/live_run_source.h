#pragma once
#include <atomic>
#include <string>

#include "gui/models/run_source.h"

namespace pw::gui {

// A live run over ZeroMQ (pw_ipc): the telemetry Subscriber and the
// ControlClient both live on the worker thread; control requests from the
// GUI are queued and sent from there with a short timeout, so a dead
// engine never blocks the GUI. No message (heartbeats included) for
// kSilenceMs marks the engine as gone (failed()); it recovers if messages
// resume.
class LiveRunSource final : public RunSource {
  Q_OBJECT
 public:
  static constexpr int kSilenceMs = 3000;
  explicit LiveRunSource(std::string endpoint, QObject* parent = nullptr);
  ~LiveRunSource() override;
  QString description() const override;

  bool canControl() const override { return true; }
  void pause() override { pending_ |= kPause; }
  void resume() override { pending_ |= kResume; }
  void requestStop() override { pending_ |= kStop; }
  void rebalance() override { pending_ |= kRebalance; }
  bool engineAlive() const { return alive_.load(); }

 protected:
  void run() override;

 private:
  enum : int { kPause = 1, kResume = 2, kStop = 4, kRebalance = 8 };
  std::string endpoint_;
  std::atomic<int> pending_{0};
  std::atomic<bool> alive_{false};
};

}  // namespace pw::gui
