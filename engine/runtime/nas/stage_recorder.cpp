#include "runtime/nas/stage_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/io/checked_write.h"
#include "core/nas/device_cache_plan.h"

namespace pw::rt::nas {
namespace {
// The record stream's lines up to a checkpoint must outlive a crash of the
// machine, not only of this process: fsync through a second descriptor
// (fsync acts on the file, whichever descriptor names it).
void sync_file(const std::string& path, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int e = errno ? errno : EIO;
    if (fd >= 0) ::close(fd);
    throw WriteError(what, path, e);
  }
  ::close(fd);
}

}  // namespace

StageRecorder::StageRecorder(std::string path, bool append, int stage, pw::nas::StageSlots slots, const StageClock& clock)
    : path_(std::move(path)),
      file_(path_, append ? std::ios::app : std::ios::trunc),
      log_(file_),
      stage_(stage),
      slots_(slots),
      clock_(clock) {
  if (!file_) throw WriteError("subnet records", path_, errno ? errno : EIO);
}

void StageRecorder::event(pw::EventKind kind, int b, std::int64_t start, std::int64_t end) {
  pw::Event e;
  e.kind = kind;
  e.stage = stage_;
  e.microbatch = b;
  e.start_ns = start;
  e.end_ns = end;
  e.first_layer = slots_.first;
  e.last_layer = slots_.last;
  log_.on_event(e);
}

void StageRecorder::memory(std::int64_t bytes) {
  // Only a change is news (the simulator's on_memory is the same).
  if (bytes == last_memory_) return;
  last_memory_ = bytes;
  log_.on_memory(stage_, clock_.now(), bytes);
}

void StageRecorder::transfer(bool load, std::int64_t key, std::int64_t start, std::int64_t end, std::int64_t bytes) {
  pw::Event e;
  e.kind = load ? pw::EventKind::SwapIn : pw::EventKind::SwapOut;
  e.stage = stage_;
  e.microbatch = pw::nas::key_choice(key);
  e.start_ns = start;
  e.end_ns = end;
  e.bytes = bytes;
  e.first_layer = e.last_layer = pw::nas::key_layer(key);
  log_.on_event(e);
}

void StageRecorder::check() const {
  if (!file_) throw WriteError("subnet records", path_, errno ? errno : EIO);
}

std::uintmax_t StageRecorder::sync() {
  flush();
  sync_file(path_, "subnet records");
  return std::filesystem::file_size(path_);
}

void StageRecorder::flush() {
  errno = 0;
  file_.flush();
  check();
}

}  // namespace pw::rt::nas
