#include "ipc/wait_readable.h"

#include <cerrno>

namespace pw::ipc {

namespace {
// Polls `n` sockets for input, resuming an interrupted poll; false on timeout.
bool poll_in(zmq::pollitem_t* items, int n, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    try {
      zmq::poll(items, static_cast<std::size_t>(n), left);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      if (clock::now() >= deadline) return false;
      continue;
    }
    return true;
  }
}
}  // namespace

bool wait_readable(zmq::socket_t& sock, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0};
  return poll_in(&item, 1, timeout) && (item.revents & ZMQ_POLLIN) != 0;
}

Readable wait_readable(zmq::socket_t& a, zmq::socket_t& b, std::chrono::milliseconds timeout) {
  zmq::pollitem_t items[2] = {{static_cast<void*>(a), 0, ZMQ_POLLIN, 0}, {static_cast<void*>(b), 0, ZMQ_POLLIN, 0}};
  if (!poll_in(items, 2, timeout)) return {false, false};
  return {(items[0].revents & ZMQ_POLLIN) != 0, (items[1].revents & ZMQ_POLLIN) != 0};
}

}  // namespace pw::ipc
