#pragma once
// A run directory belongs to one run at a time. Two runs writing one
// directory interleave their event logs and checkpoints and each records
// a part of the other's events, so the run that owns a directory holds an
// exclusive flock on RUN_DIR/run.lock for its whole life, with its pid and
// command written inside for whoever is refused. The kernel drops the lock
// when the holder dies (kill -9 included), so a lock is never stale; the
// file a killed holder leaves is reused by the next one. POSIX only.
#include <memory>
#include <stdexcept>
#include <string>

#include "core/spec/refusal.h"

namespace pw {

// The directory is held by another process (exit 2). The message names the
// directory and the holder ("pid 4242: pipewright run job.json --run-dir R").
struct RunDirBusy : std::runtime_error, Refusal {
  using std::runtime_error::runtime_error;
};

class RunDirLock {
 public:
  ~RunDirLock();  // removes the lock file, then lets the lock go
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  const std::string& file() const { return file_; }

  // Locks the existing directory `dir` for this process. Within one process
  // the same directory gives the same lock (a CLI that locks before it
  // writes, and the launcher it calls, share it: flock would refuse the
  // second descriptor). Throws RunDirBusy when another process holds it,
  // RefusedError when the lock file cannot be made (a read-only directory).
  static std::shared_ptr<RunDirLock> acquire(const std::string& dir);

  // The lock file's name inside a run directory.
  static constexpr const char* kFileName = "run.lock";

 private:
  RunDirLock(std::string file, int fd) : file_(std::move(file)), fd_(fd) {}
  std::string file_;
  int fd_;
};

}  // namespace pw
