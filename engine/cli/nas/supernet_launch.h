#pragma once
#include <string>

#include "cli/runtime/run_args.h"
#include "core/spec/job_spec.h"
#include "runtime/nas/csp_launch.h"

namespace pw::cli {

// The supernet run's launch configuration from `run`'s arguments: one CSP
// worker process per stage, the worker program (--worker, else found),
// the run directory (--run-dir; a resume continues in its own unless
// --run-dir names another, as the pipeline run does; else runs/NAME-TIME),
// checkpoints and the directory resumed. The observer, event sink, stop
// flag and interrupt probe are the command's to attach.
rt::nas::CspLaunch supernet_launch(const std::string& job_file, const JobSpec& job, const RunArgs& args);

// The CSP worker program (pw_nas_worker), which also searches and exports:
// $PW_NAS_WORKER, else next to this executable. Throws when not found.
std::string nas_worker_binary();

}  // namespace pw::cli
