#include "ipc/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <zmq.hpp>

#include "core/io/checked_write.h"
#include "core/spec/refusal.h"
#include "ipc/protocol.h"

namespace pw::ipc {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr const char* kDomain = "pipewright";

// The ZAP handler for the process-wide context: one thread answering
// libzmq's authentication requests against the union of the authorized
// client keys of every CURVE server in this process.
class ZapHandler {
 public:
  static ZapHandler& instance() {
    static auto* h = new ZapHandler();  // leaked like the context it serves
    return *h;
  }
  void authorize(const std::vector<std::string>& keys) {
    std::lock_guard lock(mu_);
    for (const auto& k : keys) allowed_.insert(k);
    if (!started_) {
      started_ = true;
      // Bind before any CURVE socket binds: libzmq asks the handler at
      // handshake time and refuses everyone when none is bound.
      sock_ = std::make_unique<zmq::socket_t>(context(), zmq::socket_type::rep);
      sock_->bind(kZapEndpoint);
      thread_ = std::thread([this] { loop(); });
      thread_.detach();
    }
  }
  void set_logger(std::function<void(const std::string&)> log) {
    std::lock_guard lock(mu_);
    log_ = std::move(log);
  }
  CurveAuthStats stats() const { return {accepted_.load(), refused_.load()}; }

 private:
  void loop() {
    for (;;) {
      std::vector<zmq::message_t> frames;
      try {
        zmq::message_t m;
        do {
          if (!sock_->recv(m)) break;
          frames.emplace_back(std::move(m));
          m = zmq::message_t();
        } while (sock_->get(zmq::sockopt::rcvmore));
      } catch (const zmq::error_t&) {
        return;  // context terminated
      }
      // ZAP request: version, request id, domain, address, identity,
      // mechanism, credentials... (RFC 27).
      std::string version = frames.size() > 0 ? frames[0].to_string() : "";
      std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
      std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
      std::string mechanism = frames.size() > 5 ? frames[5].to_string() : "";
      std::string key_z85;
      if (mechanism == "CURVE" && frames.size() > 6 && frames[6].size() == 32) {
        char buf[41] = {};
        zmq_z85_encode(buf, static_cast<const std::uint8_t*>(frames[6].data()), 32);
        key_z85 = buf;
      }
      bool ok;
      std::function<void(const std::string&)> log;
      {
        std::lock_guard lock(mu_);
        ok = version == "1.0" && mechanism == "CURVE" && allowed_.count(key_z85) > 0;
        log = log_;
      }
      (ok ? accepted_ : refused_)++;
      if (!ok) {
        std::string why = "refused " + (mechanism.empty() ? std::string("unauthenticated") : mechanism) +
                          " client from " + address + (key_z85.empty() ? "" : " with unknown key " + key_z85);
        if (log)
          log(why);
        else
          std::cerr << "pipewright: " << why << "\n";
      }
      const char* status = ok ? "200" : "400";
      const char* text = ok ? "OK" : "client key not authorized";
      sock_->send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
      sock_->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
      sock_->send(zmq::buffer(std::string(status)), zmq::send_flags::sndmore);
      sock_->send(zmq::buffer(std::string(text)), zmq::send_flags::sndmore);
      sock_->send(zmq::buffer(ok ? key_z85 : std::string()), zmq::send_flags::sndmore);
      sock_->send(zmq::buffer(std::string()), zmq::send_flags::none);
    }
  }

  std::mutex mu_;
  std::set<std::string> allowed_;
  bool started_ = false;
  std::unique_ptr<zmq::socket_t> sock_;
  std::thread thread_;
  std::function<void(const std::string&)> log_;
  std::atomic<std::uint64_t> accepted_{0}, refused_{0};
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read key file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string field(const std::string& text, const std::string& name, const std::string& path) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq);
    key.erase(key.find_last_not_of(" \t") + 1);
    key.erase(0, key.find_first_not_of(" \t"));
    if (key != name) continue;
    std::string v = line.substr(eq + 1);
    auto a = v.find('"'), b = v.rfind('"');
    if (a == std::string::npos || b == a) throw std::runtime_error(path + ": " + name + " must be quoted");
    v = v.substr(a + 1, b - a - 1);
    if (v.size() != 40) throw std::runtime_error(path + ": " + name + " is not a 40-character Z85 key");
    return v;
  }
  throw std::runtime_error(path + ": no " + name);
}

std::string key_text(const CurveKeys& k, bool with_secret, const std::string& what) {
  std::string t = "# Pipewright CURVE " + what + (with_secret ? " key pair: keep this file private (mode 0600)\n" : " public key\n");
  t += "public-key = \"" + k.public_key + "\"\n";
  if (with_secret) t += "secret-key = \"" + k.secret_key + "\"\n";
  return t;
}
}  // namespace

CurveKeys generate_curve_keys() {
  char pub[41] = {}, sec[41] = {};
  if (zmq_curve_keypair(pub, sec) != 0)
    throw std::runtime_error("this libzmq has no CURVE support (built without libsodium)");
  return {pub, sec};
}

void write_curve_key_dir(const std::string& dir, bool overwrite, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw OutputRefused(option + " " + dir + ": cannot create the directory: " + ec.message());
  CurveKeys server = generate_curve_keys(), client = generate_curve_keys();
  const std::pair<std::string, std::string> files[] = {
      {"server.key", key_text(server, true, "server")},
      {"server.pub", key_text(server, false, "server")},
      {"client.key", key_text(client, true, "client")},
      {"client.pub", key_text(client, false, "client")},
      {"authorized_clients", "# public keys of the clients this server accepts, one per line\n" + client.public_key + "\n"}};
  auto target = [&](const std::string& name) { return OutputTarget{dir + "/" + name, option, overwrite}; };
  for (const auto& [name, text] : files) check_output(target(name));
  for (const auto& [name, text] : files) write_output(target(name), text, name.ends_with(".key") ? 0600 : 0644);
}

CurveKeys read_secret_key_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read key file " + path);
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 0777));
    throw RefusedError(path + " holds a secret key but is readable by others (mode " + mode +
                             "); chmod 600 " + path);
  }
  std::string t = read_text(path);
  return {field(t, "public-key", path), field(t, "secret-key", path)};
}

std::string read_public_key_file(const std::string& path) { return field(read_text(path), "public-key", path); }

std::vector<std::string> read_authorized_keys(const std::string& path) {
  std::istringstream in(read_text(path));
  std::vector<std::string> keys;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    if (line.size() != 40) throw std::runtime_error(path + ":" + std::to_string(n) + ": not a 40-character Z85 key");
    keys.push_back(line);
  }
  return keys;
}

namespace {
// Whoever can write the key directory or the list of accepted clients can
// let any key in: both must be writable by their owner only.
void refuse_if_writable_by_others(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw RefusedError("cannot read " + std::string(what) + " " + path);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 0777));
    throw RefusedError(path + ": " + what + " is writable by group or others (mode " + mode +
                       "), so anyone could add a key; chmod go-w " + path);
  }
}
}  // namespace

CurveServer curve_server_from_dir(const std::string& dir) {
  refuse_if_writable_by_others(dir, "the key directory");
  refuse_if_writable_by_others(dir + "/authorized_clients", "authorized_clients");
  return {read_secret_key_file(dir + "/server.key"), read_authorized_keys(dir + "/authorized_clients")};
}

CurveClient curve_client_from_files(const std::string& server_pub, const std::string& client_key) {
  return {read_public_key_file(server_pub), read_secret_key_file(client_key)};
}

void apply_curve_server(zmq::socket_t& s, const CurveServer& c) {
  ZapHandler::instance().authorize(c.authorized_clients);
  s.set(zmq::sockopt::zap_domain, kDomain);
  s.set(zmq::sockopt::curve_server, 1);
  s.set(zmq::sockopt::curve_secretkey, c.keys.secret_key);
}

void apply_curve_client(zmq::socket_t& s, const CurveClient& c) {
  s.set(zmq::sockopt::curve_serverkey, c.server_public_key);
  s.set(zmq::sockopt::curve_publickey, c.keys.public_key);
  s.set(zmq::sockopt::curve_secretkey, c.keys.secret_key);
}

CurveAuthStats curve_auth_stats() { return ZapHandler::instance().stats(); }

void set_curve_refusal_logger(std::function<void(const std::string&)> log) {
  ZapHandler::instance().set_logger(std::move(log));
}

}  // namespace pw::ipc
