#include "runtime/child_process.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/events/clock.h"

namespace pw::rt {

pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                  bool die_with_parent) {
  if (argv.empty()) throw std::invalid_argument("spawn_child: no program");
  // Built before fork: the child may only call async-signal-safe functions
  // when other threads (the writer, telemetry) exist in the parent.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed starting " + argv[0]);
  if (pid == 0) {
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      // The parent died between fork and prctl: nobody would reap us.
      if (getppid() != parent) _exit(4);
    }
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

namespace {
ChildExit exit_of(int status) {
  ChildExit x;
  if (WIFEXITED(status)) x.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) x.signal = WTERMSIG(status);
  return x;
}
}  // namespace

std::string ChildExit::how() const {
  if (lost) return "was not ours to reap";
  return signal ? "killed by signal " + std::to_string(signal) : "exited with status " + std::to_string(code);
}

std::optional<ChildExit> poll_child(pid_t pid, bool report_stopped) {
  int status = 0;
  pid_t w = waitpid(pid, &status, WNOHANG | (report_stopped ? WUNTRACED : 0));
  if (w == 0) return std::nullopt;
  if (w < 0) return ChildExit{-1, 0, true};
  if (WIFSTOPPED(status)) {
    ChildExit x;
    x.stopped = WSTOPSIG(status);
    return x;
  }
  return exit_of(status);
}

ChildExit wait_child(pid_t pid) {
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  return w < 0 ? ChildExit{-1, 0, true} : exit_of(status);
}

ChildExit stop_child(pid_t pid, double grace_s) {
  const std::int64_t deadline = steady_now_ns() + static_cast<std::int64_t>(grace_s * 1e9);
  for (;;) {
    if (auto x = poll_child(pid)) return *x;
    if (steady_now_ns() > deadline) {
      kill(pid, SIGKILL);
      ChildExit x = wait_child(pid);
      x.forced = true;
      return x;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string find_sibling_program(const char* env_override, const std::vector<std::string>& relative_candidates) {
  if (env_override)
    if (const char* v = std::getenv(env_override); v && *v) return v;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const auto& rel : relative_candidates) {
    fs::path cand = (self.parent_path() / rel).lexically_normal();
    if (fs::exists(cand, ec)) return cand.string();
  }
  return {};
}

}  // namespace pw::rt
