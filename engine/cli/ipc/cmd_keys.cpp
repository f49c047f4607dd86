#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "ipc/curve.h"

namespace pw::cli {

namespace {
int write_keys(const std::string& dir) {
  ipc::write_curve_key_dir(dir);
  std::cout << "wrote CURVE keys to " << dir << "/\n"
            << "  server.key  server key pair (mode 0600): stays with the run (--curve-dir " << dir << ")\n"
            << "  server.pub  the server's public key: give it to clients (--server-key)\n"
            << "  client.key  a client key pair (mode 0600): give it to one client (--client-key)\n"
            << "  client.pub  its public key, already listed in authorized_clients\n"
            << "  authorized_clients  public keys the server accepts, one per line\n";
  return 0;
}
}  // namespace

Action define_keys(Args& args) {
  auto dir = std::make_shared<std::string>();
  args.positional("DIR", *dir, "the directory to write the keys into (created)");
  return [dir] { return write_keys(*dir); };
}

}  // namespace pw::cli
