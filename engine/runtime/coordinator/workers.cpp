// The worker processes: spawned on this host, and stopped at the end
// (asked, then killed after a grace period).
#include "runtime/coordinator/coordinator_impl.h"

#include "runtime/child_process.h"
#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

pid_t spawn_worker(const std::string& binary, const std::string& store_file, int rank, int world) {
  return spawn_child({binary}, {{"MASTER_ADDR", "127.0.0.1"},
                                {"PW_STORE_FILE", store_file},
                                {"RANK", std::to_string(rank)},
                                {"WORLD_SIZE", std::to_string(world)}});
}

void Coordinator::shutdown() {
  if (result_.exit_code != 0) {
    try {
      store_->set(keys::kAbort, to_bytes("1"));
    } catch (...) {
    }
    workers_.abort(1.0);
  }
  // One grace period for all of them, then SIGKILL.
  workers_.stop_all(result_.exit_code != 0 ? 1.0 : 30.0, [&](int, const ChildExit& x) {
    if (!x.lost && !x.forced && !x.ok() && result_.exit_code == 0) fail(1, "a worker exited with an error after reporting");
  });
}

}  // namespace pw::rt::coordinator_impl
