#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
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

// The control of `pipewright simulate --listen`: pause / resume / stop act
// on the simulation through gate(), which the simulate command calls before
// every event; --pace paces it against the wall clock. The publisher and
// the control server are the run's outputs (cli/run_outputs.h); handle() is
// the handler their control server is given.
class SimTelemetry {
 public:
  // `pace`: simulated ns per wall ns (0: as fast as possible).
  SimTelemetry(ipc::Publisher& publisher, double pace);
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req);
  // Blocks while paused, sleeps to keep the pace, throws SimStopped.
  void gate(std::int64_t t_ns);

 private:
  ipc::Publisher& pub_;
  double pace_;
  std::int64_t start_ns_ = 0;  // steady clock
  std::int64_t paused_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> any_{false};  // pause or stop requested: gate takes the slow path
};

}  // namespace pw::cli
