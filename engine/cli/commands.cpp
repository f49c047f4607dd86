#include "cli/commands.h"

namespace pw::cli {

// Commands of optional layers register themselves here under their
// layer's macro, so a core-only build still has a working CLI. The runtime's
// and the supernet runtime's commands are added by pipewright-train's main
// alone: pipewright links no libtorch (cli/train_commands.h).
const std::vector<Command>& commands() {
  static const std::vector<Command> list = [] {
    std::vector<Command> c = {
        {"simulate", "execute the job's schedule under the cost model and report throughput, bubble and memory",
         define_simulate},
        {"plan", "choose the layer partition and per-layer memory policy and print the plan", define_plan},
        {"launch",
         "print (or write) the commands that start a run across hosts, torchrun-style or as a Slurm script",
         define_launch},
    };
#ifdef PW_HAVE_DB
    for (auto& x : db_commands()) c.push_back(x);
#endif
#ifdef PW_HAVE_IPC
    for (auto& x : ipc_commands()) c.push_back(x);
#endif
    return c;
  }();
  return list;
}

}  // namespace pw::cli
