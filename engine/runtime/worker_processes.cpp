#include "runtime/worker_processes.h"

#include <signal.h>

#include <algorithm>

#include "core/events/clock.h"

namespace pw::rt {

WorkerProcesses::~WorkerProcesses() {
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGKILL);
  for (pid_t p : pids_)
    if (p > 0) wait_child(p);
}

int WorkerProcesses::running() const {
  return static_cast<int>(std::count_if(pids_.begin(), pids_.end(), [](pid_t p) { return p > 0; }));
}

std::vector<std::pair<int, ChildExit>> WorkerProcesses::reap_ended(bool report_stopped) {
  std::vector<std::pair<int, ChildExit>> ended;
  for (int r = 0; r < size(); ++r) {
    if (pids_[r] <= 0) continue;
    auto x = poll_child(pids_[r], report_stopped);
    if (!x) continue;
    stopped_.resize(pids_.size(), false);
    if (x->stopped) {
      kill(pids_[r], SIGKILL);  // reaped on a later call, not reported again
      if (!stopped_[r]) ended.emplace_back(r, *x);
      stopped_[r] = true;
      continue;
    }
    pids_[r] = 0;
    if (!stopped_[r]) ended.emplace_back(r, *x);
  }
  return ended;
}

void WorkerProcesses::abort(double grace_s) {
  if (aborting()) return;
  abort_at_ns_ = steady_now_ns();
  grace_s_ = grace_s;
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGTERM);
}

void WorkerProcesses::enforce_abort() {
  if (!aborting() || steady_now_ns() - abort_at_ns_ < static_cast<std::int64_t>(grace_s_ * 1e9)) return;
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGKILL);
}

void WorkerProcesses::stop_all(double grace_s, const std::function<void(int, const ChildExit&)>& each) {
  const std::int64_t deadline = steady_now_ns() + static_cast<std::int64_t>(grace_s * 1e9);
  for (int r = 0; r < size(); ++r) {
    if (pids_[r] <= 0) continue;
    ChildExit x = stop_child(pids_[r], std::max<double>(0, (deadline - steady_now_ns()) / 1e9));
    pids_[r] = 0;
    if (each) each(r, x);
  }
}

}  // namespace pw::rt
