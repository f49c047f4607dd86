#include "cli/commands.h"

namespace pw::cli {

Action define_watch(Args& args);
Action define_control(Args& args);
Action define_keys(Args& args);

std::vector<Command> ipc_commands() {
  return {
      {"watch", "follow a live run's telemetry (tcp://127.0.0.1:PORT) and print its progress until it ends",
       define_watch},
      {"keys", "generate CURVE keys for listening beyond loopback (server.key, client.key: mode 0600)", define_keys},
      {"control", "send a control request to a live run (ENDPOINT: its telemetry or control address)",
       define_control},
  };
}

}  // namespace pw::cli
