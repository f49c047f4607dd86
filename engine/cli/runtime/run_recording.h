#pragma once
#include <memory>
#include <string>

#include "runtime/coordinator.h"

namespace pw::cli {

// Where a real run goes besides the terminal: a run database (--db) and
// live telemetry (--listen). Empty strings switch a part off.
struct RunRecordingOptions {
  std::string db_path;
  bool overwrite = false;  // --overwrite: replace an existing Pipewright run database (never another file)
  std::string listen;
  bool allow_remote = false;  // --allow-remote: a non-loopback --listen (needs curve_dir)
  std::string curve_dir;      // server keys from `pipewright keys` (CURVE)
  // With --listen: a control server (pause, resume, stop, checkpoint,
  // rebalance) on the telemetry host posts into this.
  rt::RunCommands* commands = nullptr;
};

// A RunObserver that records the run into SQLite (pw_db's RunWriter) and
// publishes it over ZeroMQ (pw_ipc's Publisher) with a control server
// beside it, then forwards every call to `next` (the terminal progress line). Parts whose layer this build lacks
// are refused with a clear error at construction.
std::unique_ptr<rt::RunObserver> make_run_recording(const RunRecordingOptions& options, rt::RunObserver* next);

}  // namespace pw::cli
