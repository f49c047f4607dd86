#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/events/run_records.h"
#include "ipc/control.h"
#include "ipc/publisher.h"

namespace pw::cli {

// Thrown out of the simulation when a control client asks it to stop.
struct SimStopped : std::runtime_error {
  SimStopped() : std::runtime_error("stopped by control request") {}
};

// Telemetry and control of `pipewright simulate --listen`: a Publisher, and
// a ControlServer whose pause/resume/stop act on the simulation through
// gate(), which the simulate command calls before every event.
class SimTelemetry {
 public:
  // `pace`: simulated ns per wall ns (0: as fast as possible).
  // `curve`: keys for listening beyond loopback (required there).
  SimTelemetry(const std::string& listen, bool allow_remote, const std::string& run_id, double pace,
               const ipc::CurveServer* curve = nullptr);
  ipc::Publisher& publisher() { return *pub_; }
  const std::string& telemetry_endpoint() const { return pub_->endpoint(); }
  const std::string& control_endpoint() const { return ctl_->endpoint(); }
  // Blocks while paused, sleeps to keep the pace, throws SimStopped.
  void gate(std::int64_t t_ns);
  // Publishes the final status (once), then keeps serving (late joiners,
  // control) for linger_s seconds.
  void finish(RunStatus status, const std::string& reason, double linger_s);

 private:
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req);
  std::unique_ptr<ipc::Publisher> pub_;
  std::unique_ptr<ipc::ControlServer> ctl_;
  double pace_;
  std::int64_t start_wall_ns_ = 0;
  std::int64_t paused_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;
  bool finished_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> any_{false};  // pause or stop requested: gate takes the slow path
};

}  // namespace pw::cli
