#include "cli/commands.h"

namespace pw::cli {

int cmd_replay(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);

std::vector<Command> db_commands() {
  return {
      {"replay", "RUN.sqlite [--json]",
       "summarise a recorded run: job, plan, throughput, bubble, per-stage busy and peak memory, migrations, status",
       cmd_replay},
      {"export", "RUN.sqlite [--chrome-trace OUT.json] [--csv DIR]",
       "export a recorded run as a Chrome/Perfetto trace (streamed) and/or CSV tables", cmd_export},
      {"compare", "A.sqlite B.sqlite [--json]", "two recorded runs' figures side by side, with ratios B/A",
       cmd_compare},
  };
}

}  // namespace pw::cli
