#include "cli/runtime/run_control.h"

#include <optional>

namespace pw::cli {

void RunControl::serve([[maybe_unused]] RunOutputs& outputs) {
#ifdef PW_HAVE_IPC
  if (auto* pub = outputs.publisher())
    outputs.set_control_handler([this, pub](const ipc::pb::ControlRequest& r) { return handle(r, pub); });
#endif
}

#ifdef PW_HAVE_IPC
ipc::pb::ControlReply RunControl::handle(const ipc::pb::ControlRequest& req, const ipc::Publisher* pub) {
  namespace pb = ipc::pb;
  using R = pb::ControlRequest;
  const auto can = commands_.abilities();
  std::lock_guard lk(mu_);
  auto flush_needed = [&]() -> std::optional<pb::ControlReply> {
    if (can.flushes) return std::nullopt;
    return ipc::error_reply(pb::UNSUPPORTED, "the pipedream schedule has no flush to pause, stop or checkpoint at");
  };
  const auto c = req.command_case();
  if (can.only_stop && (c == R::kPause || c == R::kResume || c == R::kCheckpoint || c == R::kRebalance))
    return ipc::error_reply(pb::UNSUPPORTED, "this run's stages take stop only (a supernet run's CSP workers agree on "
                                             "a stop at a subnet: no pause, checkpoint or rebalance)");
  switch (c) {
    case R::kPause:
      if (auto e = flush_needed()) return *e;
      if (paused_) return ipc::error_reply(pb::WRONG_STATE, "already paused");
      paused_ = true;
      commands_.post(rt::RunCommand::Pause);
      break;
    case R::kResume:
      if (!paused_) return ipc::error_reply(pb::WRONG_STATE, "not paused");
      paused_ = false;
      commands_.post(rt::RunCommand::Resume);
      break;
    case R::kStop:
      if (auto e = flush_needed()) return *e;
      commands_.post(rt::RunCommand::Stop);
      break;
    case R::kCheckpoint:
      if (auto e = flush_needed()) return *e;
      if (!can.checkpoints) return ipc::error_reply(pb::UNSUPPORTED, "this run has no run directory");
      commands_.post(rt::RunCommand::Checkpoint);
      break;
    case R::kRebalance:
      if (!can.rebalances)
        return ipc::error_reply(pb::UNSUPPORTED, "online replanning is off for this job (runtime.replan)");
      commands_.post(rt::RunCommand::Rebalance);
      break;
    case R::kSet:
      return ipc::error_reply(pb::INVALID, "setting \"" + req.set().key() + "\" cannot change during a run");
    case R::kQueryStatus: break;
    default: return ipc::error_reply(pb::UNSUPPORTED, "unsupported command");
  }
  pb::ControlReply reply;
  if (pub) *reply.mutable_status() = pub->snapshot().status();
  return reply;
}
#endif

}  // namespace pw::cli
