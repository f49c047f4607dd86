#include "core/io/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "core/io/checked_write.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

// This process's command line, for the holder's note.
std::string own_command() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0' || c == '\n') c = ' ';
  return raw.empty() ? "unknown command" : clip_for_message(raw, 300);
}

// What the holder wrote, on one line; empty when it has not written yet.
std::string holder_note(int fd) {
  char buf[1024];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return {};
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n' || c == '\0') c = ' ';
  return s;
}

std::mutex g_mutex;
std::map<std::string, std::weak_ptr<RunDirLock>>& held() {
  static std::map<std::string, std::weak_ptr<RunDirLock>> m;
  return m;
}

}  // namespace

std::shared_ptr<RunDirLock> RunDirLock::acquire(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // With the pid: a child forked without exec (a test) is another holder.
  const std::string key = std::to_string(getpid()) + ":" + fs::weakly_canonical(fs::absolute(dir), ec).string();
  std::lock_guard<std::mutex> guard(g_mutex);
  if (auto mine = held()[key].lock()) return mine;
  const std::string file = (fs::path(dir) / kFileName).string();
  // A holder removes the file as it lets go: a descriptor opened on the
  // removed file would lock nothing, so the lock counts only while the
  // name still leads to the locked file.
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      throw RefusedError("run directory " + dir + ": cannot create its lock file " + file + ": " +
                         std::strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string note = err == EWOULDBLOCK ? holder_note(fd) : std::string();
      close(fd);
      if (err != EWOULDBLOCK) throw RefusedError("locking " + file + ": " + std::strerror(err));
      throw RunDirBusy("run directory " + dir + " is in use by " + (note.empty() ? "another process" : note) +
                       "; a run directory takes one run at a time (a run, a resume, a search or an export): "
                       "wait for it to end or choose another directory");
    }
    struct stat have {}, named {};
    if (fstat(fd, &have) != 0 || lstat(file.c_str(), &named) != 0 || have.st_ino != named.st_ino ||
        have.st_dev != named.st_dev) {
      close(fd);
      continue;
    }
    const std::string note = "pid " + std::to_string(getpid()) + ": " + own_command() + "\n";
    if (ftruncate(fd, 0) != 0 || pwrite(fd, note.data(), note.size(), 0) != static_cast<ssize_t>(note.size())) {
      const int err = errno ? errno : EIO;
      unlink(file.c_str());
      close(fd);
      throw WriteError("run directory lock", file, err);
    }
    std::shared_ptr<RunDirLock> lock(new RunDirLock(file, fd));
    held()[key] = lock;
    return lock;
  }
  throw RunDirBusy("run directory " + dir + ": its lock file " + file + " keeps being replaced by other processes");
}

RunDirLock::~RunDirLock() {
  // Removed while still held: no other process can have locked it meanwhile.
  unlink(file_.c_str());
  close(fd_);
}

}  // namespace pw
