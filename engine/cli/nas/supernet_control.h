#pragma once
#include <atomic>

#include "cli/run_outputs.h"

namespace pw::cli {

// --listen's control server for a supernet run, as a pipeline run's
// (cli/runtime/run_recording.cpp): status, and stop, which sets `stop`
// (the stages then drain to an agreed subnet, CspLaunch::stop). Pause,
// checkpoint and rebalance are refused saying so; settings cannot change.
// `stop` must outlive the outputs' control server. Without --listen (or
// without ipc in this build) nothing is served.
void serve_supernet_control(RunOutputs& outputs, std::atomic<bool>& stop);

}  // namespace pw::cli
