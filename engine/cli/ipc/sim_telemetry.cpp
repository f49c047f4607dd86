#include "cli/ipc/sim_telemetry.h"

#include <chrono>
#include <thread>

#include "core/events/clock.h"
#include "cli/interrupt.h"

namespace pw::cli {

namespace pb = ipc::pb;

SimTelemetry::SimTelemetry(ipc::Publisher& publisher, double pace)
    : pub_(publisher), pace_(pace), start_ns_(steady_now_ns()) {}

pb::ControlReply SimTelemetry::handle(const pb::ControlRequest& req) {
  using R = pb::ControlRequest;
  pb::ControlReply reply;
  switch (req.command_case()) {
    case R::kPause: {
      std::lock_guard lk(mu_);
      if (paused_) return ipc::error_reply(pb::WRONG_STATE, "already paused");
      paused_ = true;
      any_ = true;
      pub_.paused(true);
      break;
    }
    case R::kResume: {
      std::lock_guard lk(mu_);
      if (!paused_) return ipc::error_reply(pb::WRONG_STATE, "not paused");
      paused_ = false;
      pub_.paused(false);
      cv_.notify_all();
      break;
    }
    case R::kStop:
      stop_ = true;
      any_ = true;
      cv_.notify_all();
      break;
    case R::kCheckpoint: return ipc::error_reply(pb::UNSUPPORTED, "a simulation has no training state to checkpoint");
    case R::kSet:
      return ipc::error_reply(pb::INVALID, "setting \"" + req.set().key() + "\" cannot change during a simulation");
    case R::kQueryStatus: break;
    default: return ipc::error_reply(pb::UNSUPPORTED, "unsupported command");
  }
  *reply.mutable_status() = pub_.snapshot().status();
  // The status message itself may still be queued for sending.
  std::lock_guard lk(mu_);
  if (paused_) reply.mutable_status()->set_state(pb::PAUSED);
  return reply;
}

void SimTelemetry::gate(std::int64_t t_ns) {
  if (any_.load(std::memory_order_relaxed)) {
    if (stop_) throw SimStopped();
    std::unique_lock lk(mu_);
    if (paused_) {
      auto t0 = steady_now_ns();
      // A signal handler cannot notify a condition variable: look every 100 ms.
      while (!cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return !paused_ || stop_; })) check_interrupt();
      paused_ns_ += steady_now_ns() - t0;
    }
    if (stop_) throw SimStopped();
    any_ = paused_;
  }
  if (pace_ > 0) {
    // The steady clock: a system clock set back or forward mid-run would
    // stall the pacing or release it all at once.
    std::int64_t due = start_ns_ + paused_ns_ + static_cast<std::int64_t>(t_ns / pace_);
    for (std::int64_t now = steady_now_ns(); due > now + 1000000 && !stop_; now = steady_now_ns()) {
      check_interrupt();
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(due - now, 50000000)));
    }
    if (stop_) throw SimStopped();
  }
}

}  // namespace pw::cli
