#pragma once
#include <string>

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

}  // namespace pw::cli
