// The connection guard's cap on the number of connections (issue 22): a
// local process that opens connections without end gets each one past the
// cap shut as it is accepted, and the ones within it are left alone.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "ipc/connection_guard.h"

namespace pw::ipc {
namespace {

using namespace std::chrono_literals;

int tcp_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the server ended the connection (EOF or reset) within `wait`;
// what it sent first (libzmq's greeting) is read past.
bool ended_by_server(int fd, std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[256];
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) return true;
  }
}

TEST(ConnectionGuard, ConnectionsPastTheCapAreShutAsTheyArrive) {
  zmq::context_t ctx;
  zmq::socket_t pub(ctx, zmq::socket_type::xpub);
  pub.set(zmq::sockopt::linger, 0);
  pub.bind("tcp://127.0.0.1:*");
  std::string ep = pub.get(zmq::sockopt::last_endpoint);
  int port = std::stoi(ep.substr(ep.rfind(':') + 1));

  ConnectionGuard::Options o;
  o.max_connections = 4;
  ConnectionGuard guard(ctx, pub, o);

  const int kOpened = 12;
  std::vector<int> fds;
  for (int i = 0; i < kOpened; ++i) {
    int fd = tcp_connect(port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // The monitor reports accepts as libzmq's I/O thread makes them.
  int refused = 0;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (refused < kOpened - 4 && std::chrono::steady_clock::now() < deadline) {
    refused += guard.poll();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(refused, kOpened - 4);
  EXPECT_EQ(guard.connections(), 4u);
  int ended = 0;
  for (int fd : fds) ended += ended_by_server(fd, 200ms) ? 1 : 0;
  EXPECT_EQ(ended, kOpened - 4) << "the refused connections must see their end, the others not";
  for (int fd : fds) ::close(fd);
}

}  // namespace
}  // namespace pw::ipc
