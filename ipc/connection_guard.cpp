#include "ipc/connection_guard.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>

namespace pw::ipc {
namespace {
std::atomic<std::uint64_t> g_monitors{0};
}

ConnectionGuard::ConnectionGuard(zmq::context_t& ctx, zmq::socket_t& guarded, Options options)
    : opt_(options),
      guarded_(&guarded),
      monitor_endpoint_("inproc://pw-connection-guard-" + std::to_string(g_monitors.fetch_add(1))),
      monitor_(ctx, zmq::socket_type::pair) {
  if (zmq_socket_monitor(guarded.handle(), monitor_endpoint_.c_str(),
                         ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED) != 0)
    throw zmq::error_t();
  monitor_.set(zmq::sockopt::linger, 0);
  monitor_.connect(monitor_endpoint_);
}

ConnectionGuard::~ConnectionGuard() {
  // Stops the monitor before its PAIR peer goes.
  zmq_socket_monitor(guarded_->handle(), nullptr, 0);
}

int ConnectionGuard::take_events() {
  int refused = 0;
  for (;;) {
    zmq::message_t head, addr;
    if (!monitor_.recv(head, zmq::recv_flags::dontwait)) return refused;
    if (head.more()) (void)monitor_.recv(addr, zmq::recv_flags::dontwait);
    if (head.size() < 6) continue;
    std::uint16_t event;
    std::uint32_t value;
    std::memcpy(&event, head.data(), 2);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, 4);
    int fd = static_cast<int>(value);
    if (event == ZMQ_EVENT_ACCEPTED) {
      Conn c;
      c.since = std::chrono::steady_clock::now();
      c.local_len = sizeof c.local;
      c.peer_len = sizeof c.peer;
      // Gone already (closed before we looked): nothing to guard.
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&c.local), &c.local_len) != 0 ||
          getpeername(fd, reinterpret_cast<sockaddr*>(&c.peer), &c.peer_len) != 0) {
        conns_.erase(fd);
        continue;
      }
      if (conns_.size() >= opt_.max_connections) {
        ::shutdown(fd, SHUT_RDWR);  // as below: libzmq sees the end and frees the session
        ++refused;
        continue;
      }
      conns_[fd] = c;
    } else {
      conns_.erase(fd);
    }
  }
}

bool ConnectionGuard::same_connection(int fd, const Conn& c) const {
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0)
    return false;
  return ll == c.local_len && pl == c.peer_len && std::memcmp(&local, &c.local, ll) == 0 &&
         std::memcmp(&peer, &c.peer, pl) == 0;
}

int ConnectionGuard::poll() {
  int closed = take_events();
  auto now = std::chrono::steady_clock::now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    const int fd = it->first;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) {
      ++it;  // not TCP, or a kernel without the counter: not guarded
      continue;
    }
    double age_s = std::chrono::duration<double>(now - it->second.since).count();
    double allowance = static_cast<double>(opt_.burst_bytes) + static_cast<double>(opt_.bytes_per_s) * age_s;
    if (static_cast<double>(info.tcpi_bytes_received) > allowance && same_connection(fd, it->second)) {
      ::shutdown(fd, SHUT_RDWR);  // libzmq's engine sees the end and closes it
      ++closed;
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
  return closed;
}

}  // namespace pw::ipc
