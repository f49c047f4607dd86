#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <sys/socket.h>
#include <zmq.hpp>

namespace pw::ipc {

// Closes the TCP connections of a bound socket whose peer sends more than a
// subscriber ever needs to. Why: libzmq 4.3's XPUB stores every
// subscription a connection sends until that connection closes (manual mode
// included) and has no call to close one connection; a made-up subscription
// costs ~1 KiB, so one local process could grow the run without bound.
// A real subscriber sends its handshake and a handful of subscriptions (at
// most 64 bytes each), so the allowance is `burst_bytes` plus `bytes_per_s`
// of the connection's age; past it the guard shuts the socket down, libzmq
// sees the connection end and frees what it stored for it. The peer's own
// socket reconnects, and is cut again once it floods again.
//
// Connections beyond `max_connections` are shut down as they are accepted:
// each costs libzmq a session and buffers, so the number is bounded too.
//
// The connections come from a socket monitor (ZMQ_EVENT_ACCEPTED carries the
// fd); the bytes a peer sent from the kernel (TCP_INFO tcpi_bytes_received,
// counted on arrival, read by libzmq or not). Before a shutdown the fd's
// addresses are compared with those recorded when it was accepted, so a
// number reused by another file after a close is never touched. Not
// thread-safe: poll() on the thread that uses the guarded socket.
class ConnectionGuard {
 public:
  struct Options {
    std::uint64_t burst_bytes = 64 * 1024;
    std::uint64_t bytes_per_s = 1024;
    // Far above what a run has (the studio, a `watch` or two, scripts).
    std::size_t max_connections = 256;
  };
  ConnectionGuard(zmq::context_t& ctx, zmq::socket_t& guarded, Options options);
  ConnectionGuard(zmq::context_t& ctx, zmq::socket_t& guarded) : ConnectionGuard(ctx, guarded, Options{}) {}
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // Takes the monitor's events and closes connections over their allowance;
  // returns how many it closed.
  int poll();
  std::size_t connections() const { return conns_.size(); }

 private:
  struct Conn {
    sockaddr_storage local{}, peer{};
    socklen_t local_len = 0, peer_len = 0;
    std::chrono::steady_clock::time_point since;
  };
  bool same_connection(int fd, const Conn& c) const;
  int take_events();  // returns how many it refused (over max_connections)

  Options opt_;
  zmq::socket_t* guarded_;
  std::string monitor_endpoint_;
  zmq::socket_t monitor_;
  std::map<int, Conn> conns_;
};

}  // namespace pw::ipc
