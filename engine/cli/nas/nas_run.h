#pragma once
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/runtime/run_args.h"
#include "core/spec/job_spec.h"

namespace pw::cli {

// `pipewright run JOB` for a supernet job (one with a search_space): one CSP
// worker process per stage (engine/runtime/nas), --run-dir, --db, --listen
// (subnet states, wait edges and events), --json, --quiet, --worker.
// `given` answers which options were on the command line (those a supernet
// run refuses).
// `interrupts`: the run command's signal scope (cli/interrupt.h); SIGINT
// or SIGTERM ends the workers, recorded "interrupted", exit 128 + signal.
int run_supernet_command(const std::string& job_file, const JobSpec& job, const RunArgs& args, const Args& given,
                         const InterruptScope& interrupts);

// The CSP worker program (pw_nas_worker): supernet_launch.h.
std::string nas_worker_binary();

// `pipewright search RUN.sqlite|RUN_DIR` and `pipewright export-subnet
// RUN.sqlite` (cmd_nas_search.cpp).
Action define_search(Args& args);
Action define_export_subnet(Args& args);

}  // namespace pw::cli
