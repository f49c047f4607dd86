#include "cli/train_commands.h"

namespace pw::cli {

const std::vector<CommandSummary>& train_commands() {
  static const std::vector<CommandSummary> list = {
#ifdef PW_HAVE_RUNTIME
      {"run", "train the job for real: one libtorch worker process per stage, the plan's schedule and memory policy"},
      {"profile", "measure every layer's forward/backward time and bytes on this machine into a profile file"},
#endif
#ifdef PW_HAVE_NAS_RUNTIME
      {"search",
       "evolutionary subnet search over a trained supernet run (search_space.search), against random search; "
       "stores every scored subnet and the accuracy/latency front in RUN.sqlite"},
      {"export-subnet", "one subnet of a searched supernet run as a standalone TorchScript model with its trained weights"},
#endif
  };
  return list;
}

}  // namespace pw::cli
