#pragma once
#include <mutex>

#include "cli/run_outputs.h"
#include "runtime/run_commands.h"
#ifdef PW_HAVE_IPC
#include "ipc/control.h"
#endif

namespace pw::cli {

// The control server's handler of a real run, one for the pipeline's and
// the supernet's: each request becomes a RunCommand the engine takes at its
// next poll (the coordinator; the CSP launcher, which acts on stop), what
// the run's Abilities lack is refused saying why, and the reply carries the
// run's status. `commands` must outlive the outputs' control server.
class RunControl {
 public:
  explicit RunControl(rt::RunCommands& commands) : commands_(commands) {}

  // With --listen: handle() answers the outputs' control server, with the
  // status of its publisher. Without it (or without ipc) nothing is served.
  void serve(RunOutputs& outputs);

#ifdef PW_HAVE_IPC
  // One request, on the control server's thread; `pub` gives the status
  // (null: a reply without one).
  ipc::pb::ControlReply handle(const ipc::pb::ControlRequest& req, const ipc::Publisher* pub);
#endif

 private:
  rt::RunCommands& commands_;
  std::mutex mu_;
  bool paused_ = false;  // as requested (the stages pause at their next agreed iteration)
};

}  // namespace pw::cli
