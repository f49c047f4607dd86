#include "runtime/checked_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace pw::rt {

std::string write_error_text(const std::string& what, const std::string& path, int err) {
  return "writing " + what + " " + path + ": " + std::strerror(err);
}

WriteError::WriteError(const std::string& what, const std::string& path, int err)
    : std::runtime_error(write_error_text(what, path, err)), err_(err) {}

void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](int fd, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw WriteError(what, path, err);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(-1, errno);
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(fd, n < 0 ? errno : ENOSPC);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // A file system may accept the write into its cache and refuse the blocks
  // only at fsync (NFS, some quota set-ups): the data is on disk before the
  // rename makes it the file.
  if (::fsync(fd) != 0) fail(fd, errno);
  if (::close(fd) != 0) fail(-1, errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(-1, errno);
}

}  // namespace pw::rt
