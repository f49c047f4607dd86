#include <gtest/gtest.h>

#include <random>
#include <zmq.hpp>

#include "ipc/publisher.h"
#include "ipc/subscriber.h"

namespace pw::ipc {
namespace {

using namespace std::chrono_literals;

std::string valid_frame(std::uint64_t seq) {
  pb::Envelope env;
  env.set_protocol_major(kProtocolMajor);
  env.set_run_id("fuzz-run");
  env.set_seq(seq);
  for (int i = 0; i < 20; ++i) {
    Event e;
    e.stage = i % 4;
    e.start_ns = i * 1000;
    e.end_ns = i * 1000 + 999;
    e.bytes = 1 << 20;
    to_pb(e, env.mutable_events()->add_events());
  }
  return env.SerializeAsString();
}

TEST(Fuzz, RandomFramesAreCountedNeverCrash) {
  Subscriber sub("tcp://127.0.0.1:1");  // the decoder only; nothing connects
  std::mt19937_64 rng(42);
  const char* topics[] = {"events", "memory", "status", "heartbeat", "nonsense", "", "eventsX"};
  std::uint64_t accepted = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::string bytes(rng() % 200, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    if (sub.decode(topics[rng() % 7], bytes)) ++accepted;
  }
  const auto& s = sub.stats();
  EXPECT_EQ(s.messages, accepted);
  EXPECT_EQ(s.malformed + s.unknown + s.stale + s.messages, static_cast<std::uint64_t>(n));
  EXPECT_GT(s.malformed, static_cast<std::uint64_t>(n / 4));
  EXPECT_GT(s.unknown, static_cast<std::uint64_t>(n / 4));
  EXPECT_LT(accepted, static_cast<std::uint64_t>(n / 100));
}

TEST(Fuzz, TruncatedAndMislabelledFramesAreDropped) {
  Subscriber sub("tcp://127.0.0.1:1");
  std::string good = valid_frame(1);
  std::uint64_t bad = 0;
  for (size_t len = 0; len < good.size(); ++len)
    if (!sub.decode("events", std::string_view(good).substr(0, len))) ++bad;
  // Most prefixes cut a field in half; the ones that parse lack the run id
  // or carry an empty batch and go through the same checks.
  EXPECT_GT(bad, good.size() / 2);
  auto before = sub.stats().malformed;
  EXPECT_FALSE(sub.decode("memory", good));  // body does not match the topic
  EXPECT_EQ(sub.stats().malformed, before + 1);
  pb::Envelope newer;
  newer.ParseFromString(good);
  newer.set_protocol_major(kProtocolMajor + 1);
  auto u = sub.stats().unknown;
  EXPECT_FALSE(sub.decode("events", newer.SerializeAsString()));
  EXPECT_EQ(sub.stats().unknown, u + 1);
  // A valid frame still goes through afterwards.
  EXPECT_TRUE(sub.decode("events", valid_frame(1000)));
}

TEST(Fuzz, GarbageOnTheWireIsCountedAndTheStreamGoesOn) {
  zmq::socket_t raw(context(), zmq::socket_type::pub);
  raw.set(zmq::sockopt::linger, 0);
  std::string ep = bind_socket(raw, "tcp://127.0.0.1:*", false);
  Subscriber sub(ep);
  // Send until the subscription is live (valid heartbeats with rising seq).
  std::uint64_t seq = 0;
  bool live = false;
  for (int i = 0; i < 200 && !live; ++i) {
    pb::Envelope hb;
    hb.set_protocol_major(kProtocolMajor);
    hb.set_run_id("wire");
    hb.set_seq(++seq);
    hb.mutable_heartbeat()->set_period_ms(10);
    raw.send(zmq::buffer(std::string("heartbeat")), zmq::send_flags::sndmore);
    raw.send(zmq::buffer(hb.SerializeAsString()));
    live = sub.receive(10ms).has_value();
  }
  ASSERT_TRUE(live);
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string junk(rng() % 64, 'x');
    for (auto& c : junk) c = static_cast<char>(rng());
    int frames = 1 + i % 3;  // one, two or three frames
    for (int f = 0; f < frames; ++f)
      raw.send(zmq::buffer(f == 0 ? std::string(i % 2 ? "events" : "junk") : junk),
               f + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  raw.send(zmq::buffer(std::string("events")), zmq::send_flags::sndmore);
  raw.send(zmq::buffer(valid_frame(1)));
  std::optional<Subscriber::Message> m;
  do {
    m = sub.receive(2s);
  } while (m && m->topic != Topic::Events);
  ASSERT_TRUE(m) << "the valid frame after the garbage arrived";
  EXPECT_EQ(m->envelope.events().events_size(), 20);
  EXPECT_GE(sub.stats().malformed + sub.stats().unknown, 290u);
}

}  // namespace
}  // namespace pw::ipc
