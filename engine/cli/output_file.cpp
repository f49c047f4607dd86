#include "cli/output_file.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pw::cli {

OutputFile::OutputFile(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  errno = 0;
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_)
    throw std::runtime_error("cannot write " + what_ + " \"" + path_ + "\"" + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

OutputFile::~OutputFile() {
  if (!closed_) out_.close();
}

void OutputFile::close() {
  closed_ = true;
  errno = 0;
  out_.flush();
  bool ok = static_cast<bool>(out_);
  int err = errno;
  out_.close();
  if (!ok || !out_) {
    if (!err) err = errno;
    throw std::runtime_error("writing " + what_ + " \"" + path_ + "\" failed" + (err ? std::string(": ") + std::strerror(err) : ""));
  }
}

}  // namespace pw::cli
