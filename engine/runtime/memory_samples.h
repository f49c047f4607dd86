#pragma once
// A worker's memory samples (what its stage holds, by category, stamped
// with its stage and replica) as JSON lines beside its event file:
// run_dir/memory/<the event file's name>, one line per iteration end, which
// the coordinator follows like the events and hands to the recording
// (database, telemetry), so the studio's memory panel shows each replica's
// stages apart. A directory of their own: readers of run_dir/events take
// every line there for an event.
#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/events/clock.h"
#include "core/events/run_records.h"
#include "core/io/checked_write.h"
#include "runtime/memory.h"

namespace pw::rt {

// run_dir/events/<name> -> run_dir/memory/<name>.
inline std::string memory_file_of(const std::string& events_file) {
  namespace fs = std::filesystem;
  const fs::path p(events_file);
  return (p.parent_path().parent_path() / "memory" / p.filename()).string();
}

inline nlohmann::json memory_sample_to_json(const MemorySample& m) {
  return {{"t_ns", m.t_ns},         {"stage", m.stage},           {"replica", m.replica},
          {"bytes", m.bytes},       {"parameters", m.parameters}, {"optimizer", m.optimizer},
          {"stashed", m.stashed},   {"activations", m.activations}, {"swapped_out", m.swapped_out},
          {"budget", m.budget},     {"peak", m.peak}};
}

inline std::optional<MemorySample> memory_sample_from_json_line(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  MemorySample m;
  try {
    m.t_ns = j.at("t_ns").get<std::int64_t>();
    m.stage = j.at("stage").get<std::int32_t>();
    m.replica = j.value("replica", std::int16_t(0));
    m.bytes = j.at("bytes").get<std::int64_t>();
    m.parameters = j.value("parameters", std::int64_t(-1));
    m.optimizer = j.value("optimizer", std::int64_t(-1));
    m.stashed = j.value("stashed", std::int64_t(-1));
    m.activations = j.value("activations", std::int64_t(-1));
    m.swapped_out = j.value("swapped_out", std::int64_t(-1));
    m.budget = j.value("budget", std::int64_t(-1));
    m.peak = j.value("peak", std::int64_t(-1));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a line cut short by a dying worker
  }
  return m;
}

// The worker's side: one sample of what the stage holds now.
class MemorySampleLog {
 public:
  MemorySampleLog(const std::string& events_file, int stage, int replica) : stage_(stage), replica_(replica) {
    if (events_file.empty()) return;
    file_ = memory_file_of(events_file);
    std::filesystem::create_directories(std::filesystem::path(file_).parent_path());
    out_.open(file_, std::ios::trunc);
    if (!out_) throw WriteError("memory samples file", file_, errno);
  }
  // At an iteration's end: parameters and their gradients, optimizer
  // state, stashed versions, activations (what is left in flight), the
  // host pool of swapped-out activations, against the device budget; and
  // the iteration's high-water mark, whose activations are gone by now.
  void sample(StageMemory& memory) {
    if (!out_.is_open()) return;
    const MemoryBreakdown b = memory.now();
    MemorySample m;
    m.t_ns = steady_now_ns();  // the workers' clock, as their events
    m.stage = stage_;
    m.replica = static_cast<std::int16_t>(replica_);
    m.bytes = b.device_total();
    m.parameters = b.params + b.grads;
    m.optimizer = b.optimizer;
    m.stashed = b.stashed;
    m.activations = b.activations;
    m.swapped_out = b.host_pool;
    m.budget = memory.budget();
    m.peak = memory.take_iteration_peak();
    errno = 0;
    out_ << memory_sample_to_json(m).dump() << "\n";
    out_.flush();
    if (!out_) throw WriteError("memory samples file", file_, errno ? errno : EIO);
  }

 private:
  std::string file_;
  int stage_, replica_;
  std::ofstream out_;
};

}  // namespace pw::rt
