#include "cli/nas/supernet_control.h"

namespace pw::cli {

void serve_supernet_control([[maybe_unused]] RunOutputs& outputs, [[maybe_unused]] std::atomic<bool>& stop) {
#ifdef PW_HAVE_IPC
  auto* pub = outputs.publisher();
  if (!pub) return;
  outputs.set_control_handler([&stop, pub](const ipc::pb::ControlRequest& req) {
    namespace pb = ipc::pb;
    using R = pb::ControlRequest;
    switch (req.command_case()) {
      case R::kStop: stop = true; break;
      case R::kQueryStatus: break;
      case R::kPause:
      case R::kResume:
      case R::kCheckpoint:
      case R::kRebalance:
        return ipc::error_reply(pb::UNSUPPORTED, "a supernet run's CSP workers take stop only (no pause, "
                                                 "checkpoint or rebalance)");
      case R::kSet:
        return ipc::error_reply(pb::INVALID, "setting \"" + req.set().key() + "\" cannot change during a run");
      default: return ipc::error_reply(pb::UNSUPPORTED, "unsupported command");
    }
    pb::ControlReply reply;
    *reply.mutable_status() = pub->snapshot().status();
    return reply;
  });
#endif
}

}  // namespace pw::cli
