#pragma once
#include <string>
#include <vector>

#include "cli/run_outputs.h"

namespace pw::cli {

// `pipewright run`'s arguments (cmd_run.cpp declares them), read by the
// pipeline run and, for a supernet job, by engine/cli/nas.
struct RunArgs {
  std::string job_file;
  std::vector<std::string> overrides;  // --set
  std::string planner, profile, run_dir, resume, worker;
  int checkpoint_every = 0, threads = 0, port = 0;
  bool json = false, attach = false, eval = false, quiet = false;
  RunOutputOptions outputs;  // --db, --listen, ...
};

}  // namespace pw::cli
