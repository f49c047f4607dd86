#pragma once
// The coordinator of one run, shared by the files that implement it
// (engine/runtime/coordinator/): one file per job, all over this class.
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/events/clock.h"
#include "core/io/checkpoint_index.h"
#include "core/io/run_dir_lock.h"
#include "runtime/coordinator.h"
#include "runtime/coordinator/event_tail.h"
#include "runtime/failure_kind.h"
#include "runtime/coordinator_extension.h"
#include "runtime/rendezvous.h"
#include "runtime/replica_layout.h"
#include "runtime/worker_processes.h"

namespace pw::rt::coordinator_impl {

inline std::vector<std::uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string from_bytes(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }
inline double now_s() { return static_cast<double>(steady_now_ns()) * 1e-9; }

// workers.cpp
pid_t spawn_worker(const std::string& binary, const std::string& store_file, int rank, int world);

// What the liveness checks remember between two rounds of the loop.
struct HeartbeatWatch {
  HeartbeatWatch(int world, double now) : beats(world, -1), beat_at(world, now), started(now) {}
  std::vector<std::int64_t> beats;  // the last counter seen, per stage
  std::vector<double> beat_at;      // when it last changed
  double started;
};

// The losses read so far and the timing they give.
struct LossProgress {
  std::int64_t next;  // the next iteration whose loss is awaited
  double first_t = -1, last_t = -1;
  std::int64_t first_it = -1;
};

class Coordinator {
 public:
  // `extensions`: the features taking part in the run (run_extensions.h).
  Coordinator(const RunOptions& o, RunObserver* obs, std::vector<std::unique_ptr<CoordinatorExtension>> extensions)
      : opt_(o), obs_(obs), extensions_(std::move(extensions)) {}
  RunResult run();  // run.cpp

 private:
  // run.cpp
  void fail(int code, const std::string& why);
  void notice(const std::string& m);
  // failure_attribution.cpp
  StageFailure worker_failure(int rank);
  std::pair<int, std::string> root_cause(int rank, const StageFailure& failure);
  // liveness.cpp: true after fail()
  bool a_worker_exited();
  bool a_stage_failed(HeartbeatWatch& hb);
  // progress.cpp
  void follow(const JobSpec& job);
  void read_losses(const JobSpec& job, LossProgress& p);
  // extensions.cpp
  bool extensions_busy() const;
  std::string extensions_failure_context();
  void after_workers();
  // workers.cpp
  void shutdown();
  // data_parallel.cpp: what a run with replicas cannot do, refused naming
  // the field; how a worker process is named in messages.
  void check_replicas_supported(const PreparedJob& prepared) const;
  std::string worker_name(int rank) const;
  // run.cpp
  void lock_directories();
  // checkpoints.cpp
  void check_resume_point();
  nlohmann::json read_resume_point(PreparedJob& prepared);
  void note_checkpoints();
  // event_tail.cpp
  void stream_events();
  // commands.cpp
  void take_commands();
  // results.cpp
  void collect(const JobSpec& job);

  RunOptions opt_;
  RunObserver* obs_;
  // The run directory and the one resumed from: this run's alone while it lasts.
  std::vector<std::shared_ptr<RunDirLock>> locks_;
  std::optional<CheckpointIndex> resume_point_;  // a resume's checked checkpoint
  RunResult result_;
  std::unique_ptr<LocalStoreDir> local_store_;  // before store_: the file outlives the store
  c10::intrusive_ptr<c10d::Store> store_;
  WorkerProcesses workers_;  // our own workers (none when attached)
  std::vector<std::unique_ptr<CoordinatorExtension>> extensions_;
  int world_ = 1;     // worker processes: stages x replicas
  int replicas_ = 1;  // parallel.data
  int tensors_ = 1;   // parallel.tensor
  std::int64_t start_it_ = 0;
  std::int64_t last_checkpoint_ = 0;
  int pause_state_ = 0;  // 0 running, 1 pause requested, 2 every stage paused
  std::vector<EventTail> tails_;
};

}  // namespace pw::rt::coordinator_impl
