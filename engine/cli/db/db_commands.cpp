#include "cli/commands.h"

namespace pw::cli {

int cmd_replay(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_explain(const std::vector<std::string>& args);

std::vector<Command> db_commands() {
  return {
      {"replay", "RUN.sqlite [--json]",
       "summarise a recorded run: job, plan, throughput, bubble, per-stage busy and peak memory, migrations, status",
       cmd_replay},
      {"export", "RUN.sqlite [--chrome-trace OUT.json] [--csv DIR]",
       "export a recorded run as a Chrome/Perfetto trace (streamed) and/or CSV tables", cmd_export},
      {"compare", "A.sqlite B.sqlite [--json]", "two recorded runs' figures side by side, with ratios B/A",
       cmd_compare},
      {"explain", "RUN.sqlite [--iteration N] [--threshold-ms T] [--no-suggestions] [--json]",
       "where each stage's idle time went (fill, drain, waits on named peers, transfers, memory policy, optimizer, "
       "host overhead, imbalance), the critical path, predicted vs measured, and simulated suggestions",
       cmd_explain},
  };
}

}  // namespace pw::cli
