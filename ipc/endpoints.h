#pragma once
#include <string>

namespace zmq {
class socket_t;
}

namespace pw::ipc {

// Loopback with an ephemeral port: the default for every bound socket.
constexpr const char* kDefaultBind = "tcp://127.0.0.1:*";

// Whether a tcp:// endpoint's host is loopback (127.x, localhost, [::1]);
// ipc:// and inproc:// count as local.
bool is_local_endpoint(const std::string& endpoint);

// Binds `s` to `endpoint` and returns the endpoint actually bound (the
// ephemeral port resolved). Throws std::invalid_argument for a non-local
// endpoint unless allow_remote, std::runtime_error when binding fails.
std::string bind_socket(zmq::socket_t& s, const std::string& endpoint, bool allow_remote);

// Where a live run can be reached, written as JSON {"run_id", "telemetry",
// "control", "pid"} to `file` (atomically: write then rename), so that
// tools find the ephemeral ports of a run through its directory.
void write_endpoints_file(const std::string& file, const std::string& run_id, const std::string& telemetry,
                          const std::string& control);

}  // namespace pw::ipc
