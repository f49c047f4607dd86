#include "ipc/wait_readable.h"

#include <cerrno>

namespace pw::ipc {

bool wait_readable(zmq::socket_t& sock, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    zmq::pollitem_t item{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, left);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      if (clock::now() >= deadline) return false;
      continue;
    }
    return (item.revents & ZMQ_POLLIN) != 0;
  }
}

}  // namespace pw::ipc
