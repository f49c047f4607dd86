// Which stage a failure is blamed on: a stage that fails takes its
// neighbours down with transport errors, and those may be reported first.
#include "runtime/coordinator/coordinator_impl.h"

#include <thread>

#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

std::string Coordinator::worker_error(int rank) {
  try {
    if (store_->check({keys::error(rank)})) return from_bytes(store_->get(keys::error(rank)));
  } catch (...) {
  }
  return "";
}

// A stage that fails takes its neighbours down with transport errors
// (Gloo: "Connection closed by peer"), and those may be reported first.
// Give every worker a moment to report, then blame a stage whose error is
// not such a consequence.
bool Coordinator::is_consequence(const std::string& e) {
  return e.find("Connection closed by peer") != std::string::npos ||
         e.find("Connection reset") != std::string::npos || e.find("gloo/transport") != std::string::npos;
}
std::pair<int, std::string> Coordinator::root_cause(int rank, const std::string& err) {
  if (err.empty() || !is_consequence(err)) return {rank, err};
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int r = 0; r < world_; ++r) {
    std::string e = worker_error(r);
    if (!e.empty() && !is_consequence(e)) return {r, e};
  }
  return {rank, err};
}

}  // namespace pw::rt::coordinator_impl
