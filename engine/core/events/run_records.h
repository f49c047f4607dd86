#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event.h"

namespace pw {

// Records of a run besides its Events, shared by the recorder (pw_db), the
// telemetry protocol (pw_ipc), the engine and the studio. Integer ns
// timestamps on the run's own clock, like Event. A field that is -1 is
// unknown (e.g. the simulator has no memory breakdown).

// A fresh run id: 16 random hex digits.
std::string new_run_id();

// Interrupted: the process was told to end (SIGINT/SIGTERM) and recorded
// what it had; distinct from failed (an error) and stopped (a control request).
enum class RunStatus : std::uint8_t { Running = 0, Finished = 1, Failed = 2, Stopped = 3, Interrupted = 4 };
const char* to_string(RunStatus s);
std::optional<RunStatus> run_status_from_string(const std::string& s);

struct MemorySample {
  std::int64_t t_ns = 0;
  std::int32_t stage = 0;
  std::int64_t bytes = 0;  // resident total
  std::int64_t parameters = -1, optimizer = -1, stashed = -1, activations = -1, swapped_out = -1,
               prefetched = -1, budget = -1;
  // Which data-parallel replica of the pipeline the stage belongs to, as
  // Event::replica (the simulator's samples are replica 0's).
  std::int16_t replica = 0;
  // The highest resident total since the stage's previous sample: a real
  // run samples at iteration ends, when the activations are gone, so its
  // stage peak is this high-water mark of the iteration (the engine's
  // memory account), not `bytes`. -1 where unknown (the simulator, whose
  // samples follow every change, and runs recorded before it).
  std::int64_t peak = -1;
};

struct ThroughputSample {
  std::int64_t t_ns = 0;
  std::int64_t iteration = -1;
  double samples_per_s = 0;
  double iteration_ms = 0;
};

// One layer moving between stages on a replan (plan_version is the plan
// it moves towards).
struct Migration {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int32_t layer = -1;
  std::int32_t from_stage = -1, to_stage = -1;
  std::int64_t bytes = 0;
  std::int32_t plan_version = -1;
};

enum class SubnetPhase : std::uint8_t { Queued = 0, Forward = 1, Backward = 2, Blocked = 3, Done = 4 };
const char* to_string(SubnetPhase p);
std::optional<SubnetPhase> subnet_phase_from_string(const std::string& s);

struct SubnetState {
  std::int64_t t_ns = 0;
  std::int32_t subnet = -1;
  std::int32_t stage = -1;
  SubnetPhase phase = SubnetPhase::Queued;
};

// `waiter` waits on `waited_for` at (stage, layer) from t_ns until
// resolved_ns (-1 while unresolved): NASPipe's dependency edges.
struct SubnetEdge {
  std::int64_t t_ns = 0, resolved_ns = -1;
  std::int32_t waiter = -1, waited_for = -1, stage = -1, layer = -1;
};

enum class LogLevel : std::uint8_t { Debug = 0, Info = 1, Warning = 2, Error = 3 };
const char* to_string(LogLevel l);

struct LogRecord {
  std::int64_t t_ns = 0;
  LogLevel level = LogLevel::Info;
  std::string source;
  std::string message;
};

// The records of a run as they travel in batches: the recorder's commit,
// the publisher's queue, the telemetry decoded, the studio's batches. One
// vector per kind, one definition; each holder adds only what is its own
// (plans in its own form, status, pending updates).
struct RunRecordBatch {
  std::vector<Event> events;
  std::vector<MemorySample> memory;
  std::vector<ThroughputSample> throughput;
  std::vector<Migration> migrations;
  std::vector<SubnetState> subnet_states;
  std::vector<SubnetEdge> subnet_edges;
  std::vector<LogRecord> logs;

  std::size_t record_count() const;
  bool no_records() const { return record_count() == 0; }
  // Moves every record of `from` to the end of this batch's, leaving `from`'s empty.
  void append_records(RunRecordBatch&& from);
  void clear_records();
};

}  // namespace pw
