#pragma once
#include <atomic>
#include <optional>
#include <string>

#include "gui/models/run_source.h"
#include "ipc/curve.h"

namespace pw::gui {

// A live run over ZeroMQ (pw_ipc): the telemetry Subscriber and the
// ControlClient both live on the worker thread; control requests from the
// GUI are queued and sent from there with a short timeout, so a dead
// engine never blocks the GUI. No message (heartbeats included) for
// kSilenceMs marks the engine as gone (failed()); it recovers if messages
// resume. With `curve` (a coordinator listening beyond loopback) both
// sockets authenticate with CURVE; a coordinator that refuses the key
// simply never answers, which shows as the same timeout, worded so.
class LiveRunSource final : public RunSource {
  Q_OBJECT
 public:
  static constexpr int kSilenceMs = 3000;
  // `replica`: the data-parallel replica whose pipeline (events, memory)
  // the run shows; the model drops the others' (RunModel).
  explicit LiveRunSource(std::string endpoint, std::optional<ipc::CurveClient> curve = std::nullopt,
                         QObject* parent = nullptr, int replica = 0);
  ~LiveRunSource() override;
  QString description() const override;

  bool canControl() const override { return true; }
  void pause() override { pending_ |= kPause; }
  void resume() override { pending_ |= kResume; }
  void requestStop() override { pending_ |= kStop; }
  void rebalance() override { pending_ |= kRebalance; }
  bool engineAlive() const { return alive_.load(); }
  // To reattach showing another replica (the selector): from then on.
  const std::string& endpoint() const { return endpoint_; }
  const std::optional<ipc::CurveClient>& curve() const { return curve_; }
  int replica() const { return replica_; }

 protected:
  void run() override;

 private:
  enum : int { kPause = 1, kResume = 2, kStop = 4, kRebalance = 8 };
  std::string endpoint_;
  std::optional<ipc::CurveClient> curve_;
  int replica_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<bool> alive_{false};
};

}  // namespace pw::gui
