#pragma once
#include <chrono>
#include <utility>

#include <zmq.hpp>

namespace pw::ipc {

// True when `sock` has a message to read before `timeout` runs out.
// zmq_poll fails with EINTR whenever a signal with a handler reaches the
// polling thread (the CLI's SIGINT/SIGTERM, a profiler's or libFuzzer's
// timer); cppzmq turns that into an exception, which on a server thread is
// std::terminate and in a client is a request lost. An interrupted poll is
// resumed with what is left of the timeout instead.
bool wait_readable(zmq::socket_t& sock, std::chrono::milliseconds timeout);

// The same for two sockets: which of them has a message to read when the
// first does or `timeout` runs out ({false, false}).
using Readable = std::pair<bool, bool>;
Readable wait_readable(zmq::socket_t& a, zmq::socket_t& b, std::chrono::milliseconds timeout);

}  // namespace pw::ipc
