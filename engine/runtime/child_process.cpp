#include "runtime/child_process.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

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
