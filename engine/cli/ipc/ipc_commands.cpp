#include "cli/commands.h"

namespace pw::cli {

int cmd_watch(const std::vector<std::string>& args);
int cmd_control(const std::vector<std::string>& args);
int cmd_keys(const std::vector<std::string>& args);

std::vector<Command> ipc_commands() {
  return {
      {"watch", "ENDPOINT [--json] [--timeout S] [--interval S] [--server-key SERVER.pub --client-key CLIENT.key]",
       "follow a live run's telemetry (tcp://127.0.0.1:PORT) and print its progress until it ends", cmd_watch},
      {"keys", "DIR", "generate CURVE keys for listening beyond loopback (server.key, client.key: mode 0600)", cmd_keys},
      {"control", "ENDPOINT pause|resume|stop|checkpoint|rebalance|status|set KEY=VALUE [--timeout S] [--server-key F --client-key F]",
       "send a control request to a live run (ENDPOINT: its telemetry or control address)", cmd_control},
  };
}

}  // namespace pw::cli
