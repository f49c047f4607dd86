#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "core/events/run_recorder.h"
#ifdef PW_HAVE_IPC
#include "ipc/control.h"
#include "ipc/publisher.h"
#endif

namespace pw {
namespace db {
class RunWriter;
}
}  // namespace pw

namespace pw::cli {

// --db, --overwrite, --listen, --allow-remote, --curve-dir: where a run goes
// besides the terminal. Empty strings switch a part off.
struct RunOutputOptions {
  std::string db_path;
  bool overwrite = false;
  std::string listen;
  bool allow_remote = false;  // a non-loopback --listen (needs curve_dir)
  std::string curve_dir;      // server keys from `pipewright keys` (CURVE)
};
// Args::run_outputs (cli/command.h) declares them for a command.

// The one recording path of every command that records a run (simulate,
// run, and both for supernet jobs): a run database and live telemetry
// behind one RecorderFanout, and with --listen a control server beside the
// publisher, its endpoints announced on stderr, in heartbeats, in the
// database and in RUN.endpoints.json next to it (removed at the end).
// Parts whose layer this build lacks are refused (UsageError).
class RunOutputs {
 public:
  struct Run {
    std::string run_id, job_name, source;  // source: "run" | "simulate"
    int stages = 0;
  };
  RunOutputs(const RunOutputOptions& options, Run run);
  ~RunOutputs();
  RunOutputs(const RunOutputs&) = delete;
  RunOutputs& operator=(const RunOutputs&) = delete;

  // Every record goes here; empty when neither --db nor --listen was given.
  RunRecorder& recorder() { return fanout_; }
  bool recording() const { return !fanout_.empty(); }
  const std::string& run_id() const { return run_.run_id; }

  // What the run is, recorded alike by every command: the job, its profile
  // and its first plan (version 1, kInitialPlanReason); null: none.
  void begin(const nlohmann::json& job, const nlohmann::json* profile, const nlohmann::json* plan);
  // A coordinator's log line, to every output.
  void log(LogLevel level, const std::string& source, const std::string& message);
  // The summary (if any) and the final status, once; then control keeps
  // answering (status, snapshots for late joiners) for `linger_s` seconds.
  void finish(RunStatus status, const std::string& reason, const nlohmann::json* summary = nullptr,
              double linger_s = 0);

#ifdef PW_HAVE_IPC
  // Null without --listen.
  ipc::Publisher* publisher() { return pub_.get(); }
  // Replaces the control handler. Until one is set, the server answers
  // status queries and refuses commands: a run that cannot be steered
  // still reports.
  using ControlHandler = std::function<ipc::pb::ControlReply(const ipc::pb::ControlRequest&)>;
  void set_control_handler(ControlHandler handler);
#endif

 private:
  RunOutputOptions opt_;
  Run run_;
  RecorderFanout fanout_;
  bool finished_ = false;
  std::string endpoints_file_;
  std::unique_ptr<db::RunWriter> db_;
#ifdef PW_HAVE_IPC
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req);
  std::mutex handler_mu_;
  ControlHandler handler_;
  std::unique_ptr<ipc::Publisher> pub_;
  std::unique_ptr<ipc::ControlServer> ctl_;  // after pub_: destroyed first
#endif
};

}  // namespace pw::cli
