// Noticing a failed worker: a process that ended before reporting its
// result, a stage whose heartbeat stopped, or one that reported an error.
#include "runtime/coordinator/coordinator_impl.h"

#include <csignal>

#include "runtime/iteration_agreement.h"
#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

// A worker process that ended: fine only after it reported a result.
bool Coordinator::a_worker_exited() {
  for (const auto& [r, x] : workers_.reap_ended()) {
    if (x.lost || (x.ok() && store_->check({keys::result(r)}))) continue;
    StageFailure failure = worker_failure(r);
    const std::string err = failure.message;
    // Killed by SIGPIPE without a word: it wrote to a peer that had died
    // (a library's own socket that does not ask for MSG_NOSIGNAL); as a
    // lost peer it defers to the stage whose failure is its own.
    if (failure.message.empty() && x.signal == SIGPIPE)
      failure = {worker_name(r) + " worker " + x.how(), FailureKind::PeerLost};
    auto [cause, cause_err] = root_cause(r, failure);
    if (cause != r) fail(1, worker_name(cause) + ": " + cause_err);
    else fail(1, worker_name(r) + " worker " + x.how() + (err.empty() ? "" : ": " + err));
    return true;
  }
  return false;
}

bool Coordinator::a_stage_failed(HeartbeatWatch& hb) {
  for (int r = 0; r < world_; ++r) {
    std::int64_t b = read_counter(*store_, keys::heartbeat(r));
    double t = now_s();
    if (b != hb.beats[r]) {
      hb.beats[r] = b;
      hb.beat_at[r] = t;
    } else if (b > 0 && t - hb.beat_at[r] > opt_.heartbeat_timeout_s) {
      if (!store_->check({keys::result(r)})) {
        fail(1, worker_name(r) + " worker stopped responding (no heartbeat for " +
                    std::to_string(opt_.heartbeat_timeout_s) + " s)");
        return true;
      }
    } else if (b <= 0 && t - hb.started > 120) {
      fail(1, worker_name(r) + " worker never connected");
      return true;
    }
    StageFailure failure = worker_failure(r);
    if (!failure.message.empty()) {
      auto [cause, cause_err] = root_cause(r, failure);
      fail(1, worker_name(cause) + ": " + cause_err);
      return true;
    }
  }
  return false;
}

}  // namespace pw::rt::coordinator_impl
