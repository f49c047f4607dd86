#include "ipc/control.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <zmq.hpp>

#include "ipc/publisher.h"
#include "ipc/wait_readable.h"

namespace pw::ipc {

pb::ControlReply error_reply(pb::ErrorCode code, const std::string& message) {
  pb::ControlReply r;
  r.set_code(code);
  r.set_error(message);
  return r;
}

struct ControlServer::Impl {
  Handler handler;
  const Publisher* publisher = nullptr;
  ControlServerOptions opt;
  zmq::socket_t sock{context(), zmq::socket_type::router};
  std::string endpoint;
  std::atomic<bool> stopping{false};
  mutable std::mutex mu;
  Stats stats;
  std::map<std::string, std::chrono::steady_clock::time_point> seen;  // client name -> last heard, <= max_clients

  // With mu held. Forgets expired clients, then the least recently heard,
  // so a flood of made-up names costs a bounded map and O(max_clients) work.
  void remember(const std::string& name, std::chrono::steady_clock::time_point now) {
    if (auto it = seen.find(name); it != seen.end()) {
      it->second = now;
      return;
    }
    if (seen.size() >= opt.max_clients) {
      for (auto it = seen.begin(); it != seen.end();)
        if (now - it->second > opt.client_timeout) {
          it = seen.erase(it);
          ++stats.forgotten;
        } else {
          ++it;
        }
    }
    if (seen.size() >= opt.max_clients && !seen.empty()) {
      auto oldest = std::min_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      seen.erase(oldest);
      ++stats.forgotten;
    }
    if (opt.max_clients > 0) seen.emplace(name, now);
  }
  std::thread thread;

  pb::ControlReply answer(const pb::ControlRequest& req) {
    using R = pb::ControlRequest;
    if (req.protocol_major() > kProtocolMajor)
      return error_reply(pb::VERSION, "protocol " + std::to_string(req.protocol_major()) + " is newer than this server's " +
                                          std::to_string(kProtocolMajor));
    switch (req.command_case()) {
      case R::kHeartbeat: {
        std::lock_guard lk(mu);
        ++stats.heartbeats;
        pb::ControlReply r;
        if (publisher) *r.mutable_status() = publisher->snapshot().status();
        return r;
      }
      case R::kSnapshot:
        if (publisher) {
          pb::ControlReply r;
          *r.mutable_snapshot() = publisher->snapshot();
          *r.mutable_status() = r.snapshot().status();
          return r;
        }
        break;
      case R::kQueryStatus:
        if (publisher && !handler) {
          pb::ControlReply r;
          *r.mutable_status() = publisher->snapshot().status();
          return r;
        }
        break;
      case R::COMMAND_NOT_SET: {
        std::lock_guard lk(mu);
        ++stats.unknown;
        return error_reply(pb::UNSUPPORTED, "unknown or missing command (a newer client?)");
      }
      default: break;
    }
    if (!handler) return error_reply(pb::UNSUPPORTED, "this server takes no commands");
    try {
      return handler(req);
    } catch (const std::exception& e) {
      return error_reply(pb::INTERNAL, e.what());
    }
  }

  void run_thread() {
    while (!stopping.load()) {
      if (!wait_readable(sock, std::chrono::milliseconds(50))) continue;
      // At most 3 frames are kept: a message of many parts is read and
      // dropped without growing anything.
      std::vector<zmq::message_t> frames;
      std::size_t parts = 0;
      for (;;) {
        zmq::message_t f;
        if (!sock.recv(f, zmq::recv_flags::dontwait)) break;
        bool more = f.more();
        if (++parts <= 3) frames.push_back(std::move(f));
        if (!more) break;
      }
      if (parts > 3) frames.clear();
      // [identity, request]; a REQ-style empty delimiter is tolerated.
      if (frames.size() == 3 && frames[1].size() == 0) frames.erase(frames.begin() + 1);
      pb::ControlRequest req;
      if (frames.size() != 2 || !req.ParseFromArray(frames[1].data(), static_cast<int>(frames[1].size()))) {
        std::lock_guard lk(mu);
        ++stats.malformed;
        continue;
      }
      bool name_ok = req.client().size() <= opt.max_client_name;
      {
        std::lock_guard lk(mu);
        ++stats.requests;
        if (name_ok)
          remember(req.client().empty() ? frames[0].to_string() : req.client(), std::chrono::steady_clock::now());
        else
          ++stats.refused_names;
      }
      pb::ControlReply reply =
          name_ok ? answer(req)
                  : error_reply(pb::INVALID, "client name of " + std::to_string(req.client().size()) + " bytes; at most " +
                                                 std::to_string(opt.max_client_name) + " are accepted");
      reply.set_request_id(req.request_id());
      reply.set_server_unix_ns(unix_ns());
      if (reply.code() != pb::OK) {
        std::lock_guard lk(mu);
        ++stats.errors;
      }
      std::string bytes = reply.SerializeAsString();
      sock.send(frames[0], zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      sock.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    }
  }
};

ControlServer::ControlServer(Handler handler, const Publisher* publisher, ControlServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.handler = std::move(handler);
  I.publisher = publisher;
  I.opt = options;
  I.sock.set(zmq::sockopt::linger, 0);
  // An unroutable reply (client gone) is dropped, never blocks.
  I.sock.set(zmq::sockopt::router_mandatory, 0);
  I.sock.set(zmq::sockopt::maxmsgsize, options.max_request_bytes);
  I.sock.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  I.endpoint = bind_socket(I.sock, options.endpoint, options.allow_remote, options.curve ? &*options.curve : nullptr);
  I.thread = std::thread([this] { impl_->run_thread(); });
}

ControlServer::~ControlServer() {
  impl_->stopping = true;
  impl_->thread.join();
}

const std::string& ControlServer::endpoint() const { return impl_->endpoint; }

ControlServer::Stats ControlServer::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

std::vector<std::string> ControlServer::clients() const {
  std::lock_guard lk(impl_->mu);
  auto now = std::chrono::steady_clock::now();
  std::vector<std::string> v;
  for (const auto& [name, t] : impl_->seen)
    if (now - t <= impl_->opt.client_timeout) v.push_back(name);
  return v;
}

std::size_t ControlServer::remembered_clients() const {
  std::lock_guard lk(impl_->mu);
  return impl_->seen.size();
}

struct ControlClient::Impl {
  zmq::socket_t sock{context(), zmq::socket_type::dealer};
  // The DEALER's handshake events (zmq_socket_monitor), on an inproc PAIR.
  zmq::socket_t events{context(), zmq::socket_type::pair};
  Peer peer = Peer::Unknown;

  Impl() {
    static std::atomic<std::uint64_t> next{0};
    const std::string address = "inproc://pw-control-client-" + std::to_string(next++);
    constexpr int kWatched = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(sock.handle(), address.c_str(), kWatched) != 0) throw zmq::error_t();
    events.set(zmq::sockopt::linger, 0);
    events.connect(address);  // before the DEALER connects: no event is missed
  }
  ~Impl() { zmq_socket_monitor(sock.handle(), nullptr, 0); }

  // Reads the events that arrived. A DEALER's peer of another kind (PUB,
  // ROUTER's other peers) fails the handshake's socket-type check and the
  // connection drops before HANDSHAKE_SUCCEEDED: that is a refusal.
  void read_events() {
    for (;;) {
      zmq::message_t head, address;
      if (!events.recv(head, zmq::recv_flags::dontwait)) return;
      if (head.more()) (void)events.recv(address, zmq::recv_flags::dontwait);
      if (head.size() < 2) continue;
      std::uint16_t event = 0;
      std::memcpy(&event, head.data(), sizeof event);
      if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) peer = Peer::Control;
      else if (peer != Peer::Control) peer = Peer::Refused;
    }
  }
};

ControlClient::Peer ControlClient::peer() const {
  impl_->read_events();
  return impl_->peer;
}

ControlClient::ControlClient(const std::string& endpoint, std::string name, const CurveClient* curve)
    : impl_(std::make_unique<Impl>()), name_(std::move(name)) {
  impl_->sock.set(zmq::sockopt::linger, 0);
  if (curve) apply_curve_client(impl_->sock, *curve);
  try {
    impl_->sock.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to " + endpoint + ": " + e.what());
  }
}

ControlClient::~ControlClient() = default;

void ControlClient::send_raw(const std::string& bytes) { impl_->sock.send(zmq::buffer(bytes), zmq::send_flags::dontwait); }

std::optional<pb::ControlReply> ControlClient::request(pb::ControlRequest req, std::chrono::milliseconds timeout) {
  auto& s = impl_->sock;
  req.set_protocol_major(kProtocolMajor);
  req.set_request_id(next_id_++);
  req.set_client(name_);
  std::string bytes = req.SerializeAsString();
  // DEALER queues while disconnected; a dead server shows as a timeout.
  if (!s.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
    ++stats_.timeouts;
    return std::nullopt;
  }
  ++stats_.sent;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    // The reply, or the handshake's refusal: an endpoint that is no control
    // server is known in a millisecond, not after `timeout`.
    const Readable ready = wait_readable(s, impl_->events, left);
    if (ready.second) {
      impl_->read_events();
      if (impl_->peer == Peer::Refused) {
        ++stats_.refused;
        return std::nullopt;
      }
    }
    if (!ready.first) continue;
    zmq::message_t f;
    if (!s.recv(f, zmq::recv_flags::dontwait)) continue;
    bool extra = f.more();
    while (s.get(zmq::sockopt::rcvmore)) {
      zmq::message_t rest;
      if (!s.recv(rest, zmq::recv_flags::dontwait)) break;
    }
    pb::ControlReply reply;
    if (extra || !reply.ParseFromArray(f.data(), static_cast<int>(f.size()))) {
      ++stats_.malformed;
      continue;
    }
    if (reply.request_id() != req.request_id()) {
      ++stats_.stale;
      continue;
    }
    ++stats_.replies;
    return reply;
  }
  ++stats_.timeouts;
  return std::nullopt;
}

namespace {
template <class Setter>
pb::ControlRequest make(Setter set) {
  pb::ControlRequest r;
  set(r);
  return r;
}
}  // namespace

std::optional<pb::ControlReply> ControlClient::pause(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_pause(); }), t);
}
std::optional<pb::ControlReply> ControlClient::resume(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_resume(); }), t);
}
std::optional<pb::ControlReply> ControlClient::stop(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_stop(); }), t);
}
std::optional<pb::ControlReply> ControlClient::checkpoint(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_checkpoint(); }), t);
}
std::optional<pb::ControlReply> ControlClient::set(const std::string& key, const std::string& value,
                                                   std::chrono::milliseconds t) {
  return request(make([&](auto& r) {
                   r.mutable_set()->set_key(key);
                   r.mutable_set()->set_value(value);
                 }),
                 t);
}
std::optional<pb::ControlReply> ControlClient::rebalance(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_rebalance(); }), t);
}
std::optional<pb::ControlReply> ControlClient::query_status(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_query_status(); }), t);
}
std::optional<pb::ControlReply> ControlClient::snapshot(std::chrono::milliseconds t) {
  return request(make([](auto& r) { r.mutable_snapshot(); }), t);
}
bool ControlClient::heartbeat(std::chrono::milliseconds t) {
  auto r = request(make([](auto& r) { r.mutable_heartbeat(); }), t);
  return r.has_value();
}

}  // namespace pw::ipc
