#pragma once
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/run_outputs.h"
#include "core/io/checked_write.h"

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

// --trace through the output rule; --overwrite covers it as it covers --db.
// `inputs`: what the command reads (cli/job_inputs.h), never replaced.
inline OutputTarget trace_target(const SimulateArgs& a, std::vector<InputFile> inputs) {
  if (!a.outputs.db_path.empty() && a.outputs.db_path == a.trace)
    throw UsageError("--trace and --db name the same file " + a.trace);
  return {a.trace, "--trace", a.outputs.overwrite, std::move(inputs)};
}

}  // namespace pw::cli
