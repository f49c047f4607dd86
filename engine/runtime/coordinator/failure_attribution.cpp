// Which stage a failure is blamed on: a stage that fails takes its
// neighbours down with transport errors, and those may be reported first.
// The blame follows each error's type (FailureKind, set by the worker that
// caught it), never its message.
#include "runtime/coordinator/coordinator_impl.h"

#include <thread>

#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

StageFailure Coordinator::worker_failure(int rank) {
  StageFailure f;
  try {
    if (!store_->check({keys::error(rank)})) return f;
    f.message = from_bytes(store_->get(keys::error(rank)));
    // The worker sets the kind before the message.
    if (store_->check({keys::error_kind(rank)}))
      f.kind = failure_kind_from_string(from_bytes(store_->get(keys::error_kind(rank))));
  } catch (...) {
  }
  return f;
}

// A stage that lost a peer is usually not the root cause: give every worker
// a moment to report, then blame one whose failure is its own.
std::pair<int, std::string> Coordinator::root_cause(int rank, const StageFailure& failure) {
  if (failure.message.empty() || failure.kind != FailureKind::PeerLost) return {rank, failure.message};
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<StageFailure> all(world_);
  for (int r = 0; r < world_; ++r) all[r] = r == rank ? failure : worker_failure(r);
  int blamed = stage_to_blame(rank, all);
  return {blamed, all[blamed].message};
}

}  // namespace pw::rt::coordinator_impl
