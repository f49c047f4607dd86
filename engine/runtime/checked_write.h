#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace pw::rt {

// Writes `bytes` to `path` through `path.tmp`, fsync and rename, so the file
// is either the old one or the whole new one, never a truncated mix. Every
// system call is checked: on a full disk (ENOSPC), a file-size limit (EFBIG)
// or any other error the temporary file is removed and WriteError names what
// was written, the file and the reason ("writing checkpoint
// run/checkpoint/4/stage0.pt: No space left on device").
void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what);

// The error a failed write throws: a runtime_error whose text says what,
// where and why, keeping errno for callers that tell a full disk apart.
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& what, const std::string& path, int err);
  int error_number() const { return err_; }

 private:
  int err_;
};

// The text a write error carries, the same for every writer of the run
// ("writing events file F: No space left on device").
std::string write_error_text(const std::string& what, const std::string& path, int err);

}  // namespace pw::rt
