#pragma once
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "core/spec/job_spec.h"

namespace pw::cli {

// `pipewright run JOB` for a supernet job (one with a search_space): one CSP
// worker process per stage (engine/runtime/nas), --run-dir, --db, --listen
// (subnet states, wait edges and events), --json, --quiet, --worker.
int run_supernet_command(const std::string& job_file, const JobSpec& job, const CliArgs& args);

// The CSP worker program (pw_nas_worker), which also searches and exports:
// $PW_NAS_WORKER, else next to this executable. Throws when not found.
std::string nas_worker_binary();

// `pipewright search RUN.sqlite|RUN_DIR` and `pipewright export-subnet
// RUN.sqlite` (cmd_nas_search.cpp).
int cmd_search(const std::vector<std::string>& argv);
int cmd_export_subnet(const std::vector<std::string>& argv);

}  // namespace pw::cli
