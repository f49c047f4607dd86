#pragma once
#include <optional>
#include <string>

#include "cli/simulate_args.h"
#include "core/spec/job_spec.h"

namespace pw::cli {

// `pipewright simulate` on a supernet job (one with a search_space): runs
// the job's schedule (csp, or a baseline: gpipe, 1f1b = VPipe-style,
// pipedream = PipeDream) on the supernet simulator and, for comparison,
// sequential training of the same subnet sequence.
// --json, --trace (under the output rule); --db FILE records events, subnets,
// subnet phases and CSP wait edges; --listen publishes them as telemetry and
// takes pause / resume / stop, --pace and --linger: the pipeline simulate's
// outputs and control (cli/sim_control.h), the same options meaning the same.
int simulate_supernet_command(const JobSpec& job, const SimulateArgs& args);

}  // namespace pw::cli
