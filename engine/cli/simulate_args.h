#pragma once
#include <string>
#include <vector>

#include "cli/run_outputs.h"

namespace pw::cli {

// `pipewright simulate`'s arguments (cmd_simulate.cpp declares them), read
// by the pipeline and the supernet simulation alike.
struct SimulateArgs {
  std::string job_file;
  std::vector<std::string> overrides;  // --set
  std::string planner, profile, trace;
  bool json = false;
  RunOutputOptions outputs;  // --db, --listen, ...
  double linger_s = 0, pace = 0;
};

}  // namespace pw::cli
