// Pause, resume, stop, checkpoint and rebalance requests from outside the run.
#include "runtime/coordinator/coordinator_impl.h"

#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

void Coordinator::take_commands() {
  if (!opt_.commands) return;
  auto can = opt_.commands->abilities();
  for (RunCommand c : opt_.commands->take()) {
    bool at_flush = c == RunCommand::Pause || c == RunCommand::Stop || c == RunCommand::Checkpoint;
    if (at_flush && !can.flushes) {
      notice("the pipedream schedule has no flush to pause, stop or checkpoint at; use SIGINT to end the run");
      continue;
    }
    switch (c) {
      case RunCommand::Pause:
        if (pause_state_ != 0) break;
        store_->add(keys::kPauseRequests, 1);
        pause_state_ = 1;
        break;
      case RunCommand::Resume:
        if (pause_state_ == 0) break;
        for (int r = 0; r < world_; ++r) store_->deleteKey(keys::paused(r));
        store_->add(keys::kResumes, 1);
        if (pause_state_ == 2 && obs_) obs_->on_paused(false);
        pause_state_ = 0;
        break;
      case RunCommand::Stop:
        if (result_.stopped) break;
        store_->add(keys::kStopRequests, 1);
        result_.stopped = true;
        break;
      case RunCommand::Checkpoint:
        if (!can.checkpoints) notice("this run has no run directory to checkpoint into");
        else store_->add(keys::kCheckpointRequests, 1);
        break;
      case RunCommand::Rebalance: {
        bool taken = false;
        std::string refusal;
        for (auto& e : extensions_)
          if ((taken = e->take_command(c, refusal))) break;
        if (!taken) notice("no feature of this run rebalances");
        else if (!refusal.empty()) notice(refusal);
        break;
      }
    }
  }
  if (pause_state_ == 1) {
    bool all = true;
    for (int r = 0; r < world_ && all; ++r) all = store_->check({keys::paused(r)});
    if (all) {
      pause_state_ = 2;
      if (obs_) obs_->on_paused(true);
    }
  }
}

}  // namespace pw::rt::coordinator_impl
