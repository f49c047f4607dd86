#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pw::rt {

// The one way Pipewright starts a helper program (stage workers, the CSP
// supernet workers, the search): fork + exec, with `env` set in the child
// only. With `die_with_parent`, the child is SIGKILLed when the process that
// started it dies, even by SIGKILL, so a crashed coordinator leaves no
// orphans. Throws std::runtime_error when fork fails; an exec failure shows
// as the child's exit status 127.
pid_t spawn_child(const std::vector<std::string>& argv,
                  const std::vector<std::pair<std::string, std::string>>& env = {}, bool die_with_parent = true);

// How a child ended. A pid that was not (or no longer) this process's child
// ended unseen: `lost`, neither exited nor signalled.
struct ChildExit {
  int code = -1;    // its exit status when it exited
  int signal = 0;   // the signal that ended it, 0 if none
  bool lost = false;
  bool forced = false;  // stop_child killed it when its grace ran out
  // The signal that stopped it (SIGSTOP, SIGTSTP): it has not ended and is
  // still to be reaped. Only poll_child with `report_stopped` says so.
  int stopped = 0;
  bool ok() const { return !lost && signal == 0 && code == 0; }
  // "exited with status 3", "killed by signal 9", "was not ours to reap".
  std::string how() const;
};

// The one way Pipewright reaps what spawn_child started: poll_child
// reaps `pid` if it has ended (nullopt while it runs; with `report_stopped`
// a stopped child is reported too, as `stopped`, a worker that stopped
// responding), wait_child waits for it. stop_child waits up to `grace_s` seconds, then SIGKILLs and reaps it.
std::optional<ChildExit> poll_child(pid_t pid, bool report_stopped = false);
ChildExit wait_child(pid_t pid);
ChildExit stop_child(pid_t pid, double grace_s);

// A program shipped next to this executable: $<env_override> when set, else
// the first of `relative_candidates` (relative to this executable's folder)
// that exists. Empty when none does, so each caller says what it needs.
std::string find_sibling_program(const char* env_override, const std::vector<std::string>& relative_candidates);

}  // namespace pw::rt
