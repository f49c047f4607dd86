#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"
#include "db/search_tables.h"

namespace pw::db {

class Connection;

// The run row of a recorded run.
struct RunRecord {
  std::string run_id, name, source;
  RunStatus status = RunStatus::Running;
  std::string reason;
  int stages = 0;
  std::int64_t started_unix_ns = 0;
  std::int64_t ended_unix_ns = -1;  // -1 while running (or after a crash)
  std::string schema_version;       // "major.minor" of the file
};

struct PlanRecord {
  int version = 0;
  std::int64_t t_ns = 0;
  std::string reason;
  nlohmann::json plan;  // core/plan/plan.h to_json
};

// Per-stage aggregates of the events table, computed in SQL.
struct StageEventStats {
  int stage = 0;
  std::uint64_t events = 0;
  std::int64_t first_start_ns = 0, last_end_ns = 0;
  std::int64_t busy_ns = 0;      // is_busy kinds (core/events/event_kinds.h)
  std::int64_t duration_ns = 0;  // all kinds
  std::int64_t bytes = 0;
  std::array<std::uint64_t, kEventKindCount> by_kind{};
  std::array<std::int64_t, kEventKindCount> kind_ns{};  // time per kind (all-reduces apart from compute)
  std::int64_t peak_memory_bytes = 0;  // from the memory table
};

// Reads one recorded run, also while it is being written (WAL lets a
// reader see every committed batch). Not thread-safe: one per thread.
// Opening throws DbError with a clear reason for a missing, empty,
// truncated, garbage or non-Pipewright file, and for a newer schema major.
class RunReader {
 public:
  explicit RunReader(const std::string& path);
  ~RunReader();
  RunReader(const RunReader&) = delete;
  RunReader& operator=(const RunReader&) = delete;

  const std::string& path() const { return path_; }
  const RunRecord& run() const { return run_; }
  // Re-reads the run row (status of a live run).
  void refresh();

  nlohmann::json job() const;      // null when not recorded
  nlohmann::json profile() const;  // null when not recorded
  nlohmann::json summary() const;  // null when not recorded
  std::map<std::string, std::string> endpoints() const;
  std::vector<PlanRecord> plans() const;

  std::int64_t event_count() const;
  // Replicas of the pipeline the events come from: 1 + the largest
  // events.replica (1 for a file before 1.2, or without events).
  int replicas() const;
  // Every event in arrival order, streamed (constant memory).
  void for_each_event(const std::function<void(const Event&)>& f) const;
  // Events of `stage` that overlap [t0, t1), by start time (index
  // events_by_stage_time, bounded by the stage's longest event; the index
  // is built when the run finishes, a live or crashed run is scanned).
  std::vector<Event> events(int stage, std::int64_t t0, std::int64_t t1) const;
  // Events with row id > after_id, at most `limit`; after_id advances.
  // For following a file that another process is writing.
  std::vector<Event> events_after(std::int64_t& after_id, std::size_t limit) const;

  // Memory samples of all stages with t0 <= t < t1 by time (index
  // memory_by_time); stage < 0 means all stages, replica < 0 all replicas
  // (a file before 1.3 holds replica 0's only).
  std::vector<MemorySample> memory(std::int64_t t0, std::int64_t t1, int stage = -1, int replica = -1) const;
  void for_each_memory(const std::function<void(const MemorySample&)>& f) const;

  std::vector<ThroughputSample> throughput() const;
  std::vector<Migration> migrations() const;
  std::map<int, nlohmann::json> subnets() const;
  std::vector<SubnetState> subnet_states() const;
  std::vector<SubnetEdge> subnet_edges() const;
  std::vector<LogRecord> logs() const;
  // Searches over the trained supernet (`pipewright search`), oldest
  // first, each with its scored subnets; none in a 1.0 file
  // (db/search_tables.cpp).
  std::vector<SearchRecord> searches() const;

  // One entry per stage 0..stages-1 (stages seen in events included).
  std::vector<StageEventStats> stage_stats() const;

 private:
  std::string path_;
  std::unique_ptr<Connection> c_;
  RunRecord run_;
  std::string schema_;
  bool has_replica_ = false;   // events.replica exists (1.2)
  bool memory_has_replica_ = false;  // memory.replica exists (1.3)
  bool memory_has_peak_ = false;     // memory.peak exists (1.4)
  std::string event_columns_;  // what an event row is read from
  std::string memory_columns_;  // what a memory row is read from (memory.replica from 1.3)
  nlohmann::json run_json(const char* column) const;
};

}  // namespace pw::db
