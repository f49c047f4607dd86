#pragma once
#include <string>

namespace zmq {
class socket_t;
}

namespace pw::ipc {

struct CurveServer;

// Loopback with an ephemeral port: the default for every bound socket.
constexpr const char* kDefaultBind = "tcp://127.0.0.1:*";

// Whether a tcp:// endpoint's host is loopback (127.x, localhost, [::1]);
// ipc:// and inproc:// count as local.
bool is_local_endpoint(const std::string& endpoint);

// Binds `s` to `endpoint` and returns the endpoint actually bound (the
// ephemeral port resolved). A non-loopback endpoint must be asked for
// (allow_remote) AND secured with CURVE (`curve`: the server's keys and the
// clients it accepts); otherwise std::invalid_argument says what is
// missing. std::runtime_error when binding fails.
std::string bind_socket(zmq::socket_t& s, const std::string& endpoint, bool allow_remote,
                        const CurveServer* curve = nullptr);

// Where a live run can be reached, written as JSON {"run_id", "telemetry",
// "control", "pid"} to `file` (atomically: write then rename), so that
// tools find the ephemeral ports of a run through its directory.
void write_endpoints_file(const std::string& file, const std::string& run_id, const std::string& telemetry,
                          const std::string& control);

}  // namespace pw::ipc
