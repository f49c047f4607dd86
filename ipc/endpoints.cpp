#include "ipc/endpoints.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <zmq.hpp>

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

std::string bind_socket(zmq::socket_t& s, const std::string& endpoint, bool allow_remote, const CurveServer* curve) {
  bool local = is_local_endpoint(endpoint);
  if (!allow_remote && !local)
    throw std::invalid_argument("refusing to bind " + endpoint +
                                ": only loopback (127.0.0.1) unless binding elsewhere is asked for explicitly");
  if (!local && !curve)
    throw std::invalid_argument("refusing to bind " + endpoint +
                                " without CURVE: a non-loopback endpoint needs keys (pipewright keys DIR, then --curve-dir DIR)");
  if (curve) apply_curve_server(s, *curve);
  try {
    s.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot bind " + endpoint + ": " + e.what());
  }
  return s.get(zmq::sockopt::last_endpoint);
}

void write_endpoints_file(const std::string& file, const std::string& run_id, const std::string& telemetry,
                          const std::string& control) {
  nlohmann::json j{{"run_id", run_id}, {"telemetry", telemetry}, {"control", control}, {"pid", ::getpid()}};
  std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << j.dump(2) << "\n";
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + file);
}

}  // namespace pw::ipc
