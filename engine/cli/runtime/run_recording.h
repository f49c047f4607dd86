#pragma once
#include <memory>
#include <string>

#include "cli/run_outputs.h"
#include "runtime/coordinator.h"

namespace pw::cli {

// Where a real run goes besides the terminal (cli/run_outputs.h), and with
// --listen the RunCommands its control server posts into (pause, resume,
// stop, checkpoint, rebalance).
struct RunRecordingOptions {
  RunOutputOptions outputs;
  rt::RunCommands* commands = nullptr;
};

// A RunObserver that records the run through RunOutputs (database,
// telemetry, control), then forwards every call to `next` (the terminal
// progress line).
std::unique_ptr<rt::RunObserver> make_run_recording(const RunRecordingOptions& options, rt::RunObserver* next);

}  // namespace pw::cli
