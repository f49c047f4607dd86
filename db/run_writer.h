#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/events/event.h"
#include "core/events/run_recorder.h"
#include "core/events/run_records.h"

namespace pw::db {

// Who is writing which run. Empty/zero fields are filled in.
struct RunInfo {
  std::string run_id;              // unique per run; generated when empty
  std::string name;                // the job's name
  std::string source = "simulate"; // "simulate" | "run"
  int stages = 0;
  std::int64_t started_unix_ns = 0;  // wall clock at start; now when 0
};

struct RunWriterOptions {
  // A transaction commits when this many records wait, or when the oldest
  // has waited max_delay: large batches for throughput, a bound on what a
  // crash can lose.
  std::size_t batch_records = 32768;
  std::chrono::milliseconds max_delay{100};
  // Producers block (never drop) when this many records wait.
  std::size_t max_queued = 1u << 21;
  bool overwrite = false;  // replace an existing file (else DbError)
};

// Records one run into one SQLite file (schema: docs/database.md).
//
// Every method may be called from any thread and only queues: a writer
// thread commits the queue in batched transactions (WAL, synchronous=NORMAL,
// prepared statements). A crash of the process loses at most the batch not
// yet committed and leaves the run's status "running"; finish() sets the
// final status and leaves a self-contained file (no -wal beside it).
// Errors of the writer thread (disk full...) surface as DbError from the
// next call.
class RunWriter final : public RunRecorder {
 public:
  // Creates the file and its schema and commits the run row (status
  // running) before returning. Throws DbError.
  RunWriter(const std::string& path, RunInfo info, RunWriterOptions options = {});
  // Without finish(): commits what is queued and marks the run failed
  // ("ended without a final status").
  ~RunWriter() override;
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // EventSink: the simulator and engine stream straight into the recorder.
  void on_event(const Event& e) override;
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override;

  void memory(const MemorySample& m) override;
  void throughput(const ThroughputSample& t) override;
  void migration(const Migration& m) override;
  void subnet(std::int32_t id, const nlohmann::json& choices) override;
  void subnet_state(const SubnetState& s) override;
  void subnet_edge(const SubnetEdge& e) override;
  void log(const LogRecord& l) override;
  // Plan `version` (1, 2, ... within the run) took effect at t_ns.
  void plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) override;
  void job(const nlohmann::json& job_spec) override;
  void profile(const nlohmann::json& profile) override;
  // Figures the producer computed itself (e.g. the simulator's result).
  void summary(const nlohmann::json& summary) override;
  // Telemetry/control endpoints of a live run, for clients that find the
  // run through its file.
  void endpoint(const std::string& name, const std::string& endpoint) override;

  // Blocks until everything queued so far is committed.
  void flush() override;
  // Commits everything, sets the final status, checkpoints the WAL into
  // the file and stops the writer thread. Later records throw. After a
  // failed write (disk full) it still tries to mark the run failed, naming
  // the write error, then throws that error (DbError).
  void finish(RunStatus status, const std::string& reason = "") override;

  struct Stats {
    std::uint64_t events = 0;        // committed
    std::uint64_t records = 0;       // committed, all kinds
    std::uint64_t transactions = 0;
  };
  Stats stats() const;
  const std::string& run_id() const;
  const std::string& path() const;

 private:
  void finish_after_error(const std::string& reason);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::db
