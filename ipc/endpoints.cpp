#include "ipc/endpoints.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <zmq.hpp>

#include "core/io/checked_write.h"
#include "core/spec/refusal.h"
#include "ipc/curve.h"

namespace pw::ipc {

bool is_local_endpoint(const std::string& ep) {
  if (ep.rfind("ipc://", 0) == 0 || ep.rfind("inproc://", 0) == 0) return true;
  if (ep.rfind("tcp://", 0) != 0) return false;
  std::string host = ep.substr(6);
  if (!host.empty() && host[0] == '[') {
    auto close = host.find(']');
    return close != std::string::npos && host.substr(1, close - 1) == "::1";
  }
  host = host.substr(0, host.rfind(':'));
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

namespace {
// An endpoint refused before binding (policy or a malformed port): exit 2.
struct EndpointRefused : std::invalid_argument, Refusal {
  using std::invalid_argument::invalid_argument;
};

// ZeroMQ parses a tcp:// port with atoi and keeps its low 16 bits, so
// :99999 would silently bind port 34463: ports are checked here.
void check_port(const std::string& ep) {
  if (ep.rfind("tcp://", 0) != 0) return;
  auto colon = ep.rfind(':');
  std::string port = colon == std::string::npos ? "" : ep.substr(colon + 1);
  if (port == "*") return;
  bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stol(port) > 65535)
    throw EndpointRefused("refusing to bind " + ep + ": the port must be 0..65535 or * (any free port), got \"" + port + "\"");
}
}  // namespace

std::string bind_socket(zmq::socket_t& s, const std::string& endpoint, bool allow_remote, const CurveServer* curve) {
  check_port(endpoint);
  bool local = is_local_endpoint(endpoint);
  if (!allow_remote && !local)
    throw EndpointRefused("refusing to bind " + endpoint +
                                ": only loopback (127.0.0.1) unless binding elsewhere is asked for explicitly");
  if (!local && !curve)
    throw EndpointRefused("refusing to bind " + endpoint +
                                " without CURVE: a non-loopback endpoint needs keys (pipewright keys DIR, then --curve-dir DIR)");
  if (curve) apply_curve_server(s, *curve);
  try {
    s.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw RefusedError("cannot bind " + endpoint + ": " + e.what());
  }
  return s.get(zmq::sockopt::last_endpoint);
}

void write_endpoints_file(const std::string& file, const std::string& run_id, const std::string& telemetry,
                          const std::string& control) {
  nlohmann::json j{{"run_id", run_id}, {"telemetry", telemetry}, {"control", control}, {"pid", ::getpid()}};
  write_file_atomically(file, j.dump(2) + "\n", "endpoints file");
}

}  // namespace pw::ipc
