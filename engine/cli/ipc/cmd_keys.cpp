#include <iostream>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "ipc/curve.h"

namespace pw::cli {

int cmd_keys(const std::vector<std::string>& argv) {
  CliArgs args(argv, {}, {});
  args.expect_positional(1, "one directory");
  const std::string& dir = args.positional()[0];
  ipc::write_curve_key_dir(dir);
  std::cout << "wrote CURVE keys to " << dir << "/\n"
            << "  server.key  server key pair (mode 0600): stays with the run (--curve-dir " << dir << ")\n"
            << "  server.pub  the server's public key: give it to clients (--server-key)\n"
            << "  client.key  a client key pair (mode 0600): give it to one client (--client-key)\n"
            << "  client.pub  its public key, already listed in authorized_clients\n"
            << "  authorized_clients  public keys the server accepts, one per line\n";
  return 0;
}

}  // namespace pw::cli
