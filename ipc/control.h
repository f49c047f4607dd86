#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ipc/curve.h"
#include "ipc/endpoints.h"
#include "ipc/protocol.h"

namespace pw::ipc {

class Publisher;

struct ControlServerOptions {
  std::string endpoint = kDefaultBind;
  bool allow_remote = false;  // bind a non-loopback address (needs `curve` too)
  std::optional<CurveServer> curve;
  // A client not heard from for this long is considered gone (and its
  // entry is dropped when room is needed).
  std::chrono::milliseconds client_timeout{3000};
  // Bounds on what any local process can make the server hold (docs/protocol.md,
  // "Failure behaviour"): clients remembered (beyond it the least recently
  // heard is forgotten), the length of a client-chosen name (longer: an
  // INVALID reply, nothing kept), the size of one request frame (ZeroMQ
  // checks the announced size before allocating and drops the connection
  // of a peer that exceeds it) and the requests queued per connection.
  std::size_t max_clients = 256;
  std::size_t max_client_name = 128;
  std::int64_t max_request_bytes = 64 * 1024;
  int receive_hwm = 100;
};

// Control server (ZeroMQ ROUTER) on its own thread. The handler runs on
// that thread for pause / resume / stop / checkpoint / set / query_status
// and returns the reply (request_id and server time are filled in; a
// thrown exception becomes an INTERNAL error reply). Heartbeats and, when
// a Publisher is given, snapshots and status queries are answered
// without the handler. Malformed requests are counted and dropped;
// requests for a command this build does not know get an UNSUPPORTED
// reply. A given Publisher must outlive the server.
class ControlServer {
 public:
  using Handler = std::function<pb::ControlReply(const pb::ControlRequest&)>;
  ControlServer(Handler handler, const Publisher* publisher = nullptr, ControlServerOptions options = {});
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& endpoint() const;  // as bound, port resolved

  struct Stats {
    std::uint64_t requests = 0, malformed = 0, unknown = 0, errors = 0, heartbeats = 0;
    std::uint64_t refused_names = 0;  // client names over max_client_name
    std::uint64_t forgotten = 0;      // clients dropped to stay within max_clients
  };
  Stats stats() const;
  // Names of the clients heard from within client_timeout.
  std::vector<std::string> clients() const;
  // Clients remembered now, expired or not (at most max_clients).
  std::size_t remembered_clients() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An error reply for a handler to return.
pb::ControlReply error_reply(pb::ErrorCode code, const std::string& message);

// Control client (ZeroMQ DEALER). Requests are synchronous; replies are
// matched by request id, and late replies to timed-out requests are
// dropped. Not thread-safe: use it on one thread.
class ControlClient {
 public:
  // `curve`: the server's public key and this client's keys, for a server
  // listening beyond loopback.
  explicit ControlClient(const std::string& endpoint, std::string name = "client",
                         const CurveClient* curve = nullptr);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Sends `req` (protocol version, id and name filled in) and waits for
  // its reply; nullopt when none came within timeout (server gone).
  std::optional<pb::ControlReply> request(pb::ControlRequest req, std::chrono::milliseconds timeout);

  std::optional<pb::ControlReply> pause(std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> resume(std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> stop(std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> checkpoint(std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> set(const std::string& key, const std::string& value, std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> query_status(std::chrono::milliseconds timeout);
  // Re-plan now and migrate layers if the new plan gains (real runs).
  std::optional<pb::ControlReply> rebalance(std::chrono::milliseconds timeout);
  std::optional<pb::ControlReply> snapshot(std::chrono::milliseconds timeout);
  // True when the server answered a heartbeat within timeout.
  bool heartbeat(std::chrono::milliseconds timeout);

  // Sends raw bytes as a request frame (tests: malformed input).
  void send_raw(const std::string& bytes);

  // What the endpoint turned out to be, from ZeroMQ's handshake: Unknown
  // until one completed or failed; Control once it completed; Refused when
  // the peer ended it first (a socket of another kind: a run's telemetry
  // publisher, which `pipewright control` also accepts; or a server that
  // refused our CURVE keys). A request to a refusing peer returns nullopt
  // as soon as the refusal is seen, not when its timeout runs out.
  enum class Peer { Unknown, Control, Refused };
  Peer peer() const;

  struct Stats {
    std::uint64_t sent = 0, replies = 0, timeouts = 0, stale = 0, malformed = 0;
    std::uint64_t refused = 0;  // requests ended by the peer's refusal (Peer::Refused)
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  std::uint64_t next_id_ = 1;
  Stats stats_;
};

}  // namespace pw::ipc
