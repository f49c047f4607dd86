#include "core/io/checked_write.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace pw {

std::string write_error_text(const std::string& what, const std::string& path, int err) {
  return "writing " + what + " " + path + ": " + std::strerror(err);
}

WriteError::WriteError(const std::string& what, const std::string& path, int err)
    : std::runtime_error(write_error_text(what, path, err)), err_(err) {}

namespace {

// A new, uniquely named file beside `path` (a fixed NAME.tmp would be one
// writer's file clobbered by another's, or a user's own NAME.tmp). Returns
// -1 with errno set when the directory refuses it.
int create_temp(const std::string& path, mode_t mode, std::string& tmp) {
  std::vector<char> name(path.begin(), path.end());
  for (char c : std::string(".XXXXXX.tmp")) name.push_back(c);
  name.push_back('\0');
  int fd = ::mkstemps(name.data(), 4);
  if (fd < 0) return -1;
  tmp = name.data();
  // mkstemps makes it 0600; the file gets the mode asked for (keys: 0600,
  // everything else 0644), whatever the umask.
  if (::fchmod(fd, mode) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = err;
    return -1;
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

// Every byte, or the errno of the failure (a short write with no error is a
// full disk as far as the caller can tell).
int write_all(int fd, const char* p, std::size_t left) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

// A file system may accept the write into its cache and refuse the blocks
// only at fsync (NFS, some quota set-ups): the data is on disk before the
// rename makes it the file.
int finish_file(int fd) {
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return err;
  }
  return ::close(fd) != 0 ? errno : 0;
}

std::string directory_of(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

[[noreturn]] void refuse(const OutputTarget& t, const std::string& why) {
  throw OutputRefused(t.option + " " + t.path + ": " + why);
}

// Into place. Without overwrite, a file that appeared since check_output is
// not replaced either (RENAME_NOREPLACE); with it, one that became a run
// database or an input meanwhile is not.
void move_into_place(const OutputTarget& t, const std::string& tmp) {
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    refuse(t, why);
  };
  try {
    refuse_input(t.path, t.option, t.inputs);
  } catch (const OutputRefused&) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (!t.overwrite) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, t.path.c_str(), RENAME_NOREPLACE) == 0) return;
    if (errno == EEXIST) fail("file exists (give --overwrite to replace it)");
    if (errno != EINVAL && errno != ENOSYS) fail(std::string("cannot rename into place: ") + std::strerror(errno));
    // A file system without RENAME_NOREPLACE: the check made before writing stands.
  } else if (is_sqlite_file(t.path)) {
    fail("is an SQLite database (a recorded run?); only --db replaces a run database");
  }
  if (std::rename(tmp.c_str(), t.path.c_str()) != 0) fail(std::string("cannot rename into place: ") + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what, mode_t mode) {
  std::string tmp;
  int fd = create_temp(path, mode, tmp);
  if (fd < 0) throw WriteError(what, path, errno);
  auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    throw WriteError(what, path, err);
  };
  if (int err = write_all(fd, bytes.data(), bytes.size())) {
    ::close(fd);
    fail(err);
  }
  if (int err = finish_file(fd)) fail(err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(errno);
}

bool has_sqlite_header(const unsigned char* bytes, std::size_t n) {
  static const char kMagic[16] = "SQLite format 3";  // with its terminating NUL: 16 bytes
  return n >= sizeof kMagic && std::memcmp(bytes, kMagic, sizeof kMagic) == 0;
}

bool is_sqlite_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  unsigned char h[16];
  ssize_t n = ::read(fd, h, sizeof h);
  ::close(fd);
  return n > 0 && has_sqlite_header(h, static_cast<std::size_t>(n));
}

void refuse_input(const std::string& path, const std::string& option, const std::vector<InputFile>& inputs) {
  struct stat out {};
  if (inputs.empty() || ::stat(path.c_str(), &out) != 0) return;
  for (const auto& in : inputs) {
    struct stat st {};
    if (in.path.empty() || ::stat(in.path.c_str(), &st) != 0) continue;
    if (st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      throw OutputRefused(option + " " + path + ": is " + in.role + " this command reads (" + in.path +
                          "); refusing to replace it, even with --overwrite");
  }
}

void check_output(const OutputTarget& t) {
  if (t.path.empty()) refuse(t, "empty file name");
  struct stat st {};
  if (::stat(t.path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse(t, "is a directory");
    if (!S_ISREG(st.st_mode)) refuse(t, "not a regular file, refusing to replace it");
    refuse_input(t.path, t.option, t.inputs);
    // Before --overwrite: a run database is refused with its own reason.
    if (is_sqlite_file(t.path))
      refuse(t, "is an SQLite database (a recorded run?); refusing to replace it, even with --overwrite (only --db "
                "replaces a run database)");
    if (!t.overwrite) refuse(t, "file exists (give --overwrite to replace it)");
  }
  const std::string dir = directory_of(t.path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) refuse(t, "no directory " + dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(t, "cannot write into " + dir + ": " + std::strerror(errno));
}

void write_output(const OutputTarget& t, std::string_view bytes, mode_t mode) {
  check_output(t);
  std::string tmp;
  int fd = create_temp(t.path, mode, tmp);
  if (fd < 0) refuse(t, "cannot create a file in " + directory_of(t.path) + ": " + std::strerror(errno));
  if (int err = write_all(fd, bytes.data(), bytes.size())) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw WriteError(t.option, t.path, err);
  }
  if (int err = finish_file(fd)) {
    ::unlink(tmp.c_str());
    throw WriteError(t.option, t.path, err);
  }
  move_into_place(t, tmp);
}

OutputByOther::OutputByOther(OutputTarget target) : target_(std::move(target)) {
  check_output(target_);
  int fd = create_temp(target_.path, 0644, tmp_);
  if (fd < 0) refuse(target_, "cannot create a file in " + directory_of(target_.path) + ": " + std::strerror(errno));
  ::close(fd);
}

OutputByOther::~OutputByOther() {
  if (!placed_) ::unlink(tmp_.c_str());
}

void OutputByOther::place() {
  placed_ = true;
  move_into_place(target_, tmp_);
}

// The stream's buffer: checked write(2) calls on the temporary file, the
// first errno kept for commit() to name.
class OutputStream::FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
  ~FdBuf() override {
    if (fd_ >= 0) ::close(fd_);
  }
  int error() const { return err_; }
  // Flushes and closes; 0 or the first error.
  int finish() {
    drain();
    if (!err_) err_ = finish_file(fd_);
    else ::close(fd_);
    fd_ = -1;
    return err_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    if (!err_ && pptr() > pbase()) err_ = write_all(fd_, pbase(), static_cast<std::size_t>(pptr() - pbase()));
    setp(buf_.data(), buf_.data() + buf_.size());
    return err_ == 0;
  }
  int fd_;
  int err_ = 0;
  std::vector<char> buf_;
};

OutputStream::OutputStream(OutputTarget target) : target_(std::move(target)), out_(nullptr) {
  check_output(target_);
  int fd = create_temp(target_.path, 0644, tmp_);
  if (fd < 0) refuse(target_, "cannot create a file in " + directory_of(target_.path) + ": " + std::strerror(errno));
  buf_ = std::make_unique<FdBuf>(fd);
  out_.rdbuf(buf_.get());
}

OutputStream::~OutputStream() {
  if (!done_) {
    buf_.reset();
    ::unlink(tmp_.c_str());
  }
}

void OutputStream::commit() {
  done_ = true;
  out_.flush();
  if (int err = buf_->finish()) {
    ::unlink(tmp_.c_str());
    throw WriteError(target_.option, target_.path, err);
  }
  move_into_place(target_, tmp_);
}

}  // namespace pw
