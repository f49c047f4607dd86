#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"  // RunObserver::on_migration
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "runtime/run_commands.h"

namespace pw::rt {

struct RunOptions {
  JobSpec job;
  std::string planner;          // empty: the job's pipeline.planner
  std::optional<Plan> plan;     // run this plan instead of planning (validated against the model)
  std::string run_dir;          // weights, checkpoints, events, result.json ("" = none)
  std::string worker_binary;    // empty: pipewright-worker next to this executable, or $PW_WORKER
  int threads_per_worker = 0;   // 0: cores / stages (at least 1)
  bool attach = false;          // wait for launcher-started workers instead of forking them
  int port = 0;                 // store port (0: any free one; attach needs a fixed one)
  int checkpoint_every = 0;     // iterations; needs run_dir
  std::string resume_dir;       // a previous run_dir with a checkpoint
  bool eval = false;            // test accuracy after training (also data.eval)
  double heartbeat_timeout_s = 2.0;
  RunCommands* commands = nullptr;  // pause/resume/stop/checkpoint/rebalance from outside (may be null)
  // The signal asking the run to end (SIGINT, SIGTERM), 0 while none; asked
  // at every poll. The command that owns the process's signals answers it
  // (cli/interrupt.h); the engine installs no handler of its own. Null: never.
  std::function<int()> interrupted;
};

struct RunResult {
  int exit_code = 0;  // 0 ok, 1 a worker failed, 128 + signal interrupted (130 SIGINT, 143 SIGTERM)
  int interrupted_by = 0;  // the signal that ended the run, 0 if none
  std::string error;  // the first failure, with the stage named
  std::vector<double> losses;  // per iteration (from the first one run)
  double samples_per_s = 0;    // steady state, after the first iteration
  double iteration_ms = 0;     // mean, after the first iteration
  double accuracy = -1;        // when evaluated
  std::int64_t start_iteration = 0;
  bool stopped = false;        // ended early on a stop request (exit_code 0, weights saved)
  std::vector<nlohmann::json> stages;  // each worker's report
  Plan plan;
};

// What the coordinator tells the outside world (terminal progress,
// recording, telemetry). All calls come from the coordinator's thread.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_start(const PreparedJob& job, int start_iteration) {}
  virtual void on_iteration(std::int64_t iteration, double loss, double samples_per_s, double eta_s) {}
  // Events as the stages write them (streamed while the run goes on).
  virtual void on_events(const std::vector<Event>& events) {}
  // Each worker's memory samples (stage and replica), one per iteration end.
  virtual void on_memory(const std::vector<MemorySample>& samples) {}
  // Every stage stopped at the agreed iteration (true), or resumed (false).
  virtual void on_paused(bool paused) {}
  // A checkpoint every stage has written completely (run_dir/checkpoint/N).
  virtual void on_checkpoint(std::int64_t iteration) {}
  // Something the user should know that is not an error (a refused command).
  virtual void on_notice(const std::string& message) {}
  // A live migration (engine/runtime/migration): one record per moved layer,
  // and the whole event (reason, stall, predicted and measured gain) as JSON.
  virtual void on_migration(const std::vector<Migration>& moves, const nlohmann::json& event) {}
  virtual void on_finish(const RunResult& result) {}
};

// Plans the job, starts (or attaches) one worker per stage, rendezvous over
// a private FileStore (own workers) or a TCPStore on opt.port (attached
// workers from other hosts), follows progress, and shuts everything down:
// a worker that dies or stops sending heartbeats for heartbeat_timeout_s,
// or SIGINT/SIGTERM, stops the others and makes the run fail.
RunResult run_job(const RunOptions& options, RunObserver* observer = nullptr);

// The executable `pipewright-worker` next to the running program.
std::string default_worker_binary();

}  // namespace pw::rt
