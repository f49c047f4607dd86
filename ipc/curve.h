#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zmq {
class socket_t;
}

namespace pw::ipc {

// ZeroMQ CURVE keys (Z85 text, 40 characters each).
struct CurveKeys {
  std::string public_key;
  std::string secret_key;
};

// A server listening beyond loopback: its own keys and the public keys of
// the clients it accepts. Anyone else is refused during the handshake (the
// ZAP handler) and the refusal is logged.
struct CurveServer {
  CurveKeys keys;
  std::vector<std::string> authorized_clients;
};

// A client of such a server: the server's public key and its own keys.
struct CurveClient {
  std::string server_public_key;
  CurveKeys keys;
};

CurveKeys generate_curve_keys();

// `pipewright keys DIR`: writes server.key and client.key (public + secret,
// mode 0600), server.pub and client.pub (public only), and
// authorized_clients (client.pub's key) into DIR (created). Through the
// output rule (core/io/checked_write.h): all five files are checked before
// any is written, so an existing one (without `overwrite`) leaves DIR as it
// was; throws OutputRefused naming `option`.
void write_curve_key_dir(const std::string& dir, bool overwrite = false, const std::string& option = "keys DIR");

// Reads a .key file (public + secret). Refuses files that group or others
// can read: a secret key must be private to its owner.
CurveKeys read_secret_key_file(const std::string& path);
// Reads the public key from a .pub or .key file.
std::string read_public_key_file(const std::string& path);
// One public key per line; blank lines and # comments ignored.
std::vector<std::string> read_authorized_keys(const std::string& path);

// Loads a server's settings from a key directory (server.key + authorized_clients).
CurveServer curve_server_from_dir(const std::string& dir);
// Loads a client's settings: the server's public key file and the client's key file.
CurveClient curve_client_from_files(const std::string& server_pub, const std::string& client_key);

// Socket options; call before bind / connect.
void apply_curve_server(zmq::socket_t& s, const CurveServer& c);
void apply_curve_client(zmq::socket_t& s, const CurveClient& c);

// Handshakes the ZAP handler accepted and refused in this process.
struct CurveAuthStats {
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
};
CurveAuthStats curve_auth_stats();
// Where refusals are logged (default: stderr).
void set_curve_refusal_logger(std::function<void(const std::string&)> log);

}  // namespace pw::ipc
