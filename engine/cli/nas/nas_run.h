#pragma once
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/runtime/run_args.h"
#include "core/spec/job_spec.h"

namespace pw::cli {

// `pipewright run JOB` for a supernet job (one with a search_space): one CSP
// worker process per stage (engine/runtime/nas), --run-dir, --db, --listen
// (subnet states, wait edges and events), --json, --quiet, --worker.
// `given` answers which options were on the command line (those a supernet
// run refuses).
int run_supernet_command(const std::string& job_file, const JobSpec& job, const RunArgs& args, const Args& given);

// The CSP worker program (pw_nas_worker), which also searches and exports:
// $PW_NAS_WORKER, else next to this executable. Throws when not found.
std::string nas_worker_binary();

// `pipewright search RUN.sqlite|RUN_DIR` and `pipewright export-subnet
// RUN.sqlite` (cmd_nas_search.cpp).
Action define_search(Args& args);
Action define_export_subnet(Args& args);

}  // namespace pw::cli
