#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "ipc/curve.h"

namespace pw::cli {

namespace {
int write_keys(const std::string& dir, bool overwrite) {
  ipc::write_curve_key_dir(dir, overwrite, "keys DIR");
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
  struct A {
    std::string dir;
    bool overwrite = false;
  };
  auto a = std::make_shared<A>();
  args.positional("DIR", a->dir, "the directory to write the keys into (created)");
  args.overwrite(a->overwrite);
  return [a] { return write_keys(a->dir, a->overwrite); };
}

}  // namespace pw::cli
