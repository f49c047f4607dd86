#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/child_process.h"

namespace pw::rt {

// The worker processes of one run on this host (spawn_child), known by
// their index (a rank, a stage): reaped in exit order, and ended together
// when the run fails or is interrupted. The pipeline coordinator and the
// supernet launcher share it, so a worker that dies, stops (SIGSTOP) or
// outlives an abort is handled alike in both.
class WorkerProcesses {
 public:
  WorkerProcesses() = default;
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;
  // Anything still running is killed and reaped: no orphan, no zombie.
  ~WorkerProcesses();

  void add(pid_t pid) { pids_.push_back(pid); }
  int size() const { return static_cast<int>(pids_.size()); }
  int running() const;
  bool aborting() const { return abort_at_ns_ >= 0; }

  // The workers that ended since the last call, (index, how), reaped. With
  // `report_stopped`, a worker stopped by a signal (it never answers its
  // peers again) is reported too, with ChildExit::stopped, and killed: its
  // end is reaped (and not reported again) on a later call.
  std::vector<std::pair<int, ChildExit>> reap_ended(bool report_stopped = false);

  // Asks every running worker to end (SIGTERM), once; after `grace_s`
  // seconds, enforce_abort() kills those still there (a peer blocked on a
  // failed stage would otherwise wait for the transport's timeout).
  void abort(double grace_s);
  void enforce_abort();

  // The end of a run: each running worker gets up to `grace_s` seconds
  // (one deadline for all) to exit, then SIGKILL; `each` is told how every
  // one of them ended (ChildExit::forced when killed).
  void stop_all(double grace_s, const std::function<void(int, const ChildExit&)>& each = {});

 private:
  std::vector<pid_t> pids_;     // <= 0: reaped
  std::vector<bool> stopped_;   // reported stopped (and killed): its end is not news
  std::int64_t abort_at_ns_ = -1;
  double grace_s_ = 0;
};

}  // namespace pw::rt
