#pragma once
// A supernet stage's clock and record stream (csp_trainer.cpp): what the
// launcher follows and hands to the run's recorder.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/events/clock.h"
#include "core/events/event.h"
#include "core/nas/subnet_log.h"
#include "core/nas/supernet_partition.h"

namespace pw::rt::nas {

// The stage's one clock: nanoseconds since the launcher's origin (steady
// clocks are one per host), so every stage's records share one timeline;
// the stage's own training time is two readings of the same clock.
class StageClock {
 public:
  explicit StageClock(std::int64_t origin_ns) : origin_(origin_ns >= 0 ? origin_ns : steady_now_ns()) {}
  std::int64_t now() const { return steady_now_ns() - origin_; }

 private:
  std::int64_t origin_;
};

// The studio's dependency data (subnet states, wait edges) and the stage's
// events, streamed to the launcher through a file it follows: one JSON
// record a line (SubnetLogWriter), on the stage clock. A resumed stage
// appends to the stream the launcher cut back to the checkpoint, so the
// run's records read as one.
class StageRecorder {
 public:
  // Throws WriteError naming `path` when it cannot be opened.
  StageRecorder(std::string path, bool append, int stage, pw::nas::StageSlots slots, const StageClock& clock);
  pw::nas::SubnetLogWriter& log() { return log_; }
  // A compute event of subnet b over the stage's layers.
  void event(pw::EventKind kind, int b, std::int64_t start, std::int64_t end);
  // The stage's resident bytes now (candidates on the device and the
  // activations of subnets in flight): the run's memory samples per stage,
  // what a pipeline stage's memory account gives the studio's memory panel.
  void memory(std::int64_t bytes);
  // A device cache load or write-back as the simulator records them:
  // SwapIn / SwapOut, microbatch = the candidate's choice, first_layer = its layer.
  void transfer(bool load, std::int64_t key, std::int64_t start, std::int64_t end, std::int64_t bytes);
  // The waits CspStage::next reported, each once while it lasts.
  void waits(const std::vector<pw::nas::SubnetWait>& w) { waits_.report(w, clock_.now(), &log_); }
  void forget(int b) { waits_.forget(b); }
  // A full disk ends the stage when it happens, naming the file (the
  // stream keeps no errno of its own; the failed write's is still set).
  void check() const;
  // Flushed and on disk (fsync: a checkpoint names this many bytes of it as
  // its part of the run, so they must outlive a machine crash too).
  std::uintmax_t sync();
  void flush();

 private:
  std::string path_;
  std::ofstream file_;
  pw::nas::SubnetLogWriter log_;
  pw::nas::WaitReporter waits_;
  int stage_;
  pw::nas::StageSlots slots_;
  const StageClock& clock_;
  std::int64_t last_memory_ = -1;
};

}  // namespace pw::rt::nas
