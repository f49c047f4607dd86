#include "ipc/subscriber.h"

#include <zmq.hpp>
#include "ipc/wait_readable.h"

namespace pw::ipc {

struct Subscriber::Impl {
  zmq::socket_t sock{context(), zmq::socket_type::sub};
};

Subscriber::Subscriber(const std::string& endpoint, SubscriberOptions options) : impl_(std::make_unique<Impl>()) {
  auto& s = impl_->sock;
  s.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  s.set(zmq::sockopt::linger, 0);
  if (options.curve) apply_curve_client(s, *options.curve);
  try {
    s.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to " + endpoint + ": " + e.what());
  }
  // Heartbeat last: once one arrives, every earlier subscription is live
  // at the publisher (subscriptions travel in order on one connection).
  if (options.topics.empty()) {
    s.set(zmq::sockopt::subscribe, "");
  } else {
    for (Topic t : options.topics)
      if (t != Topic::Heartbeat) s.set(zmq::sockopt::subscribe, to_string(t));
    s.set(zmq::sockopt::subscribe, to_string(Topic::Heartbeat));
  }
}

Subscriber::~Subscriber() = default;

std::optional<Subscriber::Message> Subscriber::decode(std::string_view topic_name, std::string_view payload) {
  auto topic = topic_from_string(topic_name);
  if (!topic) {
    ++stats_.unknown;
    return std::nullopt;
  }
  Message m{*topic, {}};
  if (!m.envelope.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    ++stats_.malformed;
    return std::nullopt;
  }
  const auto& env = m.envelope;
  if (env.protocol_major() > kProtocolMajor || env.body_case() == pb::Envelope::BODY_NOT_SET) {
    ++stats_.unknown;
    return std::nullopt;
  }
  if (env.body_case() != body_of(*topic) || env.seq() == 0 || env.run_id().empty()) {
    ++stats_.malformed;
    return std::nullopt;
  }
  if (env.run_id() != run_id_) {  // a new run on this endpoint: start over
    run_id_ = env.run_id();
    ++stats_.runs;
    for (auto& e : expected_) e = 0;
  }
  auto& expect = expected_[static_cast<int>(*topic)];
  if (expect != 0) {
    if (env.seq() < expect) {
      ++stats_.stale;
      return std::nullopt;
    }
    if (env.seq() > expect) {
      ++stats_.gaps;
      stats_.missed += env.seq() - expect;
    }
  }
  expect = env.seq() + 1;
  ++stats_.messages;
  if (env.has_events()) stats_.events += env.events().events_size();
  if (env.has_heartbeat() && !env.heartbeat().control_endpoint().empty())
    control_endpoint_ = env.heartbeat().control_endpoint();
  if (env.has_heartbeat() && !env.heartbeat().pipewright_version().empty())
    publisher_version_ = env.heartbeat().pipewright_version();
  return m;
}

std::optional<Subscriber::Message> Subscriber::receive(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto& s = impl_->sock;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    if (!wait_readable(s, left)) return std::nullopt;
    zmq::message_t topic, payload;
    if (!s.recv(topic, zmq::recv_flags::dontwait)) continue;
    bool two = topic.more() && s.recv(payload, zmq::recv_flags::dontwait);
    // Frames beyond two make the message malformed; drain them.
    bool extra = two && payload.more();
    while (s.get(zmq::sockopt::rcvmore)) {
      zmq::message_t rest;
      if (!s.recv(rest, zmq::recv_flags::dontwait)) break;
    }
    if (!two || extra) {
      ++stats_.malformed;
      continue;
    }
    auto m = decode(topic.to_string_view(), payload.to_string_view());
    if (m) return m;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
  }
}

std::optional<Subscriber::Message> Subscriber::wait_connected(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto m = receive(left);
    if (!m || m->topic == Topic::Heartbeat) return m;
  }
}

void Subscriber::apply_snapshot(const std::string& run_id, const pb::Snapshot& snapshot) {
  if (run_id != run_id_) {
    run_id_ = run_id;
    ++stats_.runs;
    for (auto& e : expected_) e = 0;
  }
  for (const auto& ts : snapshot.last_seq()) {
    auto t = topic_from_string(ts.topic());
    if (!t) continue;
    auto& e = expected_[static_cast<int>(*t)];
    e = std::max(e, ts.seq() + 1);
  }
}

}  // namespace pw::ipc
