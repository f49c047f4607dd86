#include "cli/commands.h"

namespace pw::cli {

Action define_replay(Args& args);
Action define_export(Args& args);
Action define_compare(Args& args);
Action define_explain(Args& args);

std::vector<Command> db_commands() {
  return {
      {"replay",
       "summarise a recorded run: job, plan, throughput, bubble, per-stage busy and peak memory, migrations, status",
       define_replay},
      {"export", "export a recorded run as a Chrome/Perfetto trace (streamed) and/or CSV tables", define_export},
      {"compare", "two recorded runs' figures side by side, with ratios B/A", define_compare},
      {"explain",
       "where each stage's idle time went (fill, drain, waits on named peers, transfers, memory policy, optimizer, "
       "host overhead, imbalance), the critical path, predicted vs measured, and simulated suggestions",
       define_explain},
  };
}

}  // namespace pw::cli
