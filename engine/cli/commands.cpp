#include "cli/commands.h"

namespace pw::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"simulate", "JOB.json [--planner P] [--json] [--trace OUT.json] [--set a.b=v ...]",
       "execute the job's schedule under the cost model and report throughput, bubble and memory", cmd_simulate},
      {"plan", "JOB.json [--planner P] [--json] [--set a.b=v ...]",
       "choose the layer partition and per-layer memory policy and print the plan", cmd_plan},
  };
  return list;
}

}  // namespace pw::cli
