// The private rendezvous directory of a single-host run, and its cleanup
// by whoever outlives its owner (rendezvous.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/io/checked_write.h"
#include "runtime/rendezvous.h"

namespace pw::rt {
namespace {

constexpr const char* kPrefix = "pipewright-run-";
constexpr const char* kOwnerFile = "owner";

// A process's start time in clock ticks since boot (/proc/PID/stat, field
// 22): with the pid, it tells a live owner from a reused pid. 0 where it
// cannot be read.
unsigned long long start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i)
    if (i == 22) return std::strtoull(f.c_str(), nullptr, 10);
  return 0;
}

bool owner_running(pid_t pid, unsigned long long started) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const unsigned long long now = start_time(pid);
  return started == 0 || now == 0 || now == started;
}

// Closes every descriptor from `from` on, in a forked child (no allocation).
void close_from(int from) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, from, ~0U, 0) == 0) return;
#endif
  for (int fd = from; fd < 65536; ++fd) close(fd);
}

}  // namespace

int remove_stale_store_dirs(const std::string& tmp) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(tmp, ec)) {
    const std::string name = d.path().filename().string();
    struct stat st {};
    if (name.rfind(kPrefix, 0) != 0 || lstat(d.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    std::ifstream in(d.path() / kOwnerFile);
    std::string pid_word, start_word;
    long long pid = 0;
    unsigned long long started = 0;
    if (!(in >> pid_word >> pid >> start_word >> started) || pid_word != "pid" || start_word != "start") continue;
    if (owner_running(static_cast<pid_t>(pid), started)) continue;
    std::error_code rm;
    fs::remove_all(d.path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

LocalStoreDir::LocalStoreDir() {
  const std::string tmp = std::filesystem::temp_directory_path().string();
  remove_stale_store_dirs(tmp);  // what killed runs before this one left
  std::string base = tmp + "/" + kPrefix + "XXXXXX";
  std::vector<char> buf(base.begin(), base.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("cannot create a private directory under " + base);
  dir_ = buf.data();  // mkdtemp makes it 0700: the store is this user's alone
  file_ = dir_ + "/store";
  try {
    write_file_atomically(dir_ + "/" + kOwnerFile,
                          "pid " + std::to_string(getpid()) + " start " + std::to_string(start_time(getpid())) + "\n",
                          "rendezvous owner", 0600);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
  // The watcher: blocks on a pipe whose only writer is this process (close
  // on exec: the workers do not hold it), so it wakes when we end, however
  // we end, and removes the directory. Started through a second fork, so
  // that it is not our child (what counts our children, a test, sees only
  // the workers), in its own session (out of a terminal's or a process
  // group's signals meant for the run). Between fork and exec only
  // async-signal-safe calls: this process has threads.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // the next run's sweep is then the only cleanup
  std::vector<std::string> argv_s{"/bin/rm", "-rf", "--", dir_};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t middle = fork();
  if (middle == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    struct sigaction ign {}, dfl {};
    ign.sa_handler = SIG_IGN;
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &ign, nullptr);
    sigaction(SIGHUP, &ign, nullptr);
    sigaction(SIGPIPE, &ign, nullptr);
    sigaction(SIGTERM, &dfl, nullptr);  // the run's own handler would only set a flag here
    dup2(fds[0], 0);  // dup2 clears close-on-exec on the copy
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    close_from(3);  // the run's sockets, databases and locks are not the watcher's to hold
    char c;
    while (read(0, &c, 1) < 0 && errno == EINTR) {
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[0]);
  if (middle < 0) {
    close(fds[1]);
    return;
  }
  while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
  }
  watch_fd_ = fds[1];
}

LocalStoreDir::~LocalStoreDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (watch_fd_ >= 0) close(watch_fd_);  // the watcher wakes to a directory already gone
}

}  // namespace pw::rt
