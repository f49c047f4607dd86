#include "cli/ipc/sim_telemetry.h"

#include <chrono>
#include <thread>

#include "cli/interrupt.h"

namespace pw::cli {

namespace pb = ipc::pb;

SimTelemetry::SimTelemetry(const std::string& listen, bool allow_remote, const std::string& run_id, double pace,
                           const ipc::CurveServer* curve)
    : pace_(pace) {
  ipc::PublisherOptions po;
  po.endpoint = listen;
  po.allow_remote = allow_remote;
  if (curve) po.curve = *curve;
  pub_ = std::make_unique<ipc::Publisher>(run_id, po);
  ipc::ControlServerOptions co;
  // Control binds on the telemetry host, ephemeral port; clients learn it
  // from heartbeats.
  std::string host = pub_->endpoint().substr(0, pub_->endpoint().rfind(':'));
  co.endpoint = host + ":*";
  co.allow_remote = allow_remote;
  if (curve) co.curve = *curve;
  ctl_ = std::make_unique<ipc::ControlServer>([this](const pb::ControlRequest& r) { return handle(r); }, pub_.get(), co);
  pub_->set_control_endpoint(ctl_->endpoint());
  start_wall_ns_ = ipc::unix_ns();
}

pb::ControlReply SimTelemetry::handle(const pb::ControlRequest& req) {
  using R = pb::ControlRequest;
  pb::ControlReply reply;
  switch (req.command_case()) {
    case R::kPause: {
      std::lock_guard lk(mu_);
      if (paused_) return ipc::error_reply(pb::WRONG_STATE, "already paused");
      paused_ = true;
      any_ = true;
      pub_->paused(true);
      break;
    }
    case R::kResume: {
      std::lock_guard lk(mu_);
      if (!paused_) return ipc::error_reply(pb::WRONG_STATE, "not paused");
      paused_ = false;
      pub_->paused(false);
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
  *reply.mutable_status() = pub_->snapshot().status();
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
      auto t0 = ipc::unix_ns();
      // A signal handler cannot notify a condition variable: look every 100 ms.
      while (!cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return !paused_ || stop_; })) check_interrupt();
      paused_ns_ += ipc::unix_ns() - t0;
    }
    if (stop_) throw SimStopped();
    any_ = paused_;
  }
  if (pace_ > 0) {
    std::int64_t due = start_wall_ns_ + paused_ns_ + static_cast<std::int64_t>(t_ns / pace_);
    for (std::int64_t now = ipc::unix_ns(); due > now + 1000000 && !stop_; now = ipc::unix_ns()) {
      check_interrupt();
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(due - now, 50000000)));
    }
    if (stop_) throw SimStopped();
  }
}

void SimTelemetry::finish(RunStatus status, const std::string& reason, double linger_s) {
  if (!finished_) {
    pub_->status(status, reason);
    pub_->flush();
    finished_ = true;
  }
  // Lingers in slices so SIGINT/SIGTERM ends it (the run already has its final status).
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger_s);
  while (linger_s > 0 && std::chrono::steady_clock::now() < until && !interrupt_signal())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace pw::cli
