#pragma once
// `pipewright` started as a child process by the supernet tests, its CSP
// workers the build's (PW_NAS_WORKER_BIN).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace pw::nastest {

// Starts the CLI; stdout and stderr go to `out` and `err` where given,
// else stay the test's.
inline pid_t spawn_cli(std::vector<std::string> args, const std::filesystem::path& out = {},
                       const std::filesystem::path& err = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!out.empty() && !freopen(out.c_str(), "w", stdout)) _exit(126);
    if (!err.empty() && !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    setenv("PW_NAS_WORKER", PW_NAS_WORKER_BIN, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The child's exit status; 128 + the signal that ended it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace pw::nastest
