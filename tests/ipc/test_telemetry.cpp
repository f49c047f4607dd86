#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "ipc/control.h"
#include "ipc/publisher.h"
#include "ipc/subscriber.h"

namespace pw::ipc {
namespace {

using namespace std::chrono_literals;

Event event(std::int64_t i, int stages = 4) {
  Event e;
  e.stage = static_cast<std::int32_t>(i % stages);
  e.kind = static_cast<EventKind>(i % 3);
  e.start_ns = i * 100;
  e.end_ns = i * 100 + 50 + i % 11;
  e.microbatch = static_cast<std::int32_t>(i % 9) - 1;
  e.chunk = static_cast<std::int16_t>(i % 2);
  e.first_layer = static_cast<std::int32_t>(i % 5);
  e.last_layer = e.first_layer + 2;
  e.bytes = i * 7;
  return e;
}

PublisherOptions fast_heartbeat() {
  PublisherOptions o;
  o.heartbeat = 20ms;
  return o;
}

TEST(Telemetry, EveryKindArrivesInOrderWithoutGaps) {
  Publisher pub("run-a", fast_heartbeat());
  EXPECT_EQ(pub.endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << pub.endpoint();
  EXPECT_EQ(pub.endpoint().find('*'), std::string::npos);
  Subscriber sub(pub.endpoint());
  ASSERT_TRUE(sub.wait_connected(3s));

  const int n = 20000;
  pub.set_run_info("job-a", 4, "simulate");
  pub.status(RunStatus::Running);
  for (int i = 0; i < n; ++i) {
    pub.on_event(event(i));
    if (i % 100 == 0) pub.on_memory(i % 4, i * 100, i * 1000);
  }
  pub.throughput({5, 1, 12.5, 80});
  pub.migration({1, 2, 3, 0, 1, 99, 2});
  pub.subnet_state({4, 7, 2, SubnetPhase::Blocked});
  pub.subnet_edge({4, -1, 7, 6, 2, 11});
  pub.log({6, LogLevel::Error, "worker 2", "hello"});
  pub.plan(2, 7, "replan", nlohmann::json{{"planner", "vpipe"}});
  pub.status(RunStatus::Finished);

  std::vector<Event> got;
  int memory = 0, other = 0;
  bool finished = false;
  while (!finished) {
    auto m = sub.receive(3s);
    ASSERT_TRUE(m) << "timed out after " << got.size() << " events";
    const auto& env = m->envelope;
    EXPECT_EQ(env.run_id(), "run-a");
    EXPECT_EQ(env.protocol_major(), kProtocolMajor);
    switch (m->topic) {
      case Topic::Events:
        for (const auto& e : env.events().events()) got.push_back(from_pb(e));
        break;
      case Topic::Memory: memory += env.memory().samples_size(); break;
      case Topic::Status:
        EXPECT_EQ(env.status().job_name(), "job-a");
        finished = env.status().state() == pb::FINISHED;
        break;
      case Topic::Heartbeat: break;
      case Topic::Migrations:
        EXPECT_EQ(from_pb(env.migrations().migrations(0)).bytes, 99);
        ++other;
        break;
      case Topic::Subnets:
        if (env.subnets().states_size()) EXPECT_EQ(from_pb(env.subnets().states(0)).phase, SubnetPhase::Blocked);
        if (env.subnets().edges_size()) EXPECT_EQ(from_pb(env.subnets().edges(0)).resolved_ns, -1);
        ++other;
        break;
      case Topic::Logs:
        EXPECT_EQ(from_pb(env.logs().lines(0)).message, "hello");
        ++other;
        break;
      case Topic::Plan:
        EXPECT_EQ(nlohmann::json::parse(env.plan().plan_json())["planner"], "vpipe");
        ++other;
        break;
      case Topic::Throughput:
        EXPECT_DOUBLE_EQ(env.throughput().samples_per_s(), 12.5);
        ++other;
        break;
    }
  }
  ASSERT_EQ(got.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto w = event(i);
    ASSERT_TRUE(got[i].start_ns == w.start_ns && got[i].end_ns == w.end_ns && got[i].bytes == w.bytes &&
                got[i].stage == w.stage && got[i].kind == w.kind && got[i].microbatch == w.microbatch &&
                got[i].chunk == w.chunk && got[i].first_layer == w.first_layer && got[i].last_layer == w.last_layer)
        << "event " << i;
  }
  EXPECT_EQ(memory, n / 100);
  EXPECT_EQ(other, 6);  // subnet states and edges go as two messages
  EXPECT_EQ(sub.stats().gaps, 0u);
  EXPECT_EQ(sub.stats().malformed + sub.stats().unknown, 0u);
  EXPECT_EQ(sub.stats().events, static_cast<std::uint64_t>(n));
}

// Protocol minor 2 (issue 39): an all-reduce bucket of replica 3 arrives
// as sent, and a message from a sender before it (no replica field) reads
// as replica 0.
TEST(Telemetry, AllReduceEventCarriesItsReplica) {
  Event ar;
  ar.stage = 2;
  ar.replica = 3;
  ar.kind = EventKind::AllReduce;
  ar.start_ns = 7000;
  ar.end_ns = 9500;
  ar.bytes = 25 << 20;
  ar.first_layer = 8;
  ar.last_layer = 11;
  Publisher pub("run-dp", fast_heartbeat());
  Subscriber sub(pub.endpoint());
  ASSERT_TRUE(sub.wait_connected(3s));
  pub.on_event(ar);
  pub.status(RunStatus::Finished);
  std::vector<Event> got;
  for (bool done = false; !done;) {
    auto m = sub.receive(3s);
    ASSERT_TRUE(m) << "timed out";
    if (m->topic == Topic::Events)
      for (const auto& e : m->envelope.events().events()) got.push_back(from_pb(e));
    done = m->topic == Topic::Status && m->envelope.status().state() == pb::FINISHED;
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, EventKind::AllReduce);
  EXPECT_EQ(got[0].replica, 3);
  EXPECT_EQ(got[0].stage, 2);
  EXPECT_EQ(got[0].bytes, 25 << 20);
  EXPECT_EQ(got[0].start_ns, 7000);
  EXPECT_EQ(got[0].end_ns, 9500);
  EXPECT_EQ(got[0].first_layer, 8);
  EXPECT_EQ(got[0].last_layer, 11);
  EXPECT_EQ(sub.stats().malformed + sub.stats().unknown, 0u);

  pb::Event old_sender;
  to_pb(ar, &old_sender);
  old_sender.clear_replica();
  EXPECT_EQ(from_pb(old_sender).replica, 0);
  old_sender.set_replica(1 << 20);  // beyond Event::replica's 16 bits: damage, not a replica
  EXPECT_EQ(from_pb(old_sender).replica, 0);
}

// A memory sample carries its replica (issue 39) through the protocol; a
// sender before the field reads as replica 0, and a value beyond 16 bits
// is damage, read as 0 too.
TEST(Telemetry, MemorySampleCarriesItsReplica) {
  MemorySample m;
  m.t_ns = 123;
  m.stage = 1;
  m.replica = 2;
  m.bytes = 5 << 20;
  m.activations = 3 << 20;
  pb::MemorySample wire;
  to_pb(m, &wire);
  MemorySample back = from_pb(wire);
  EXPECT_EQ(back.replica, 2);
  EXPECT_EQ(back.stage, 1);
  EXPECT_EQ(back.bytes, 5 << 20);
  EXPECT_EQ(back.activations, 3 << 20);
  wire.clear_replica();
  EXPECT_EQ(from_pb(wire).replica, 0);
  wire.set_replica(1 << 20);
  EXPECT_EQ(from_pb(wire).replica, 0);
}

// A memory sample's iteration peak (run database 1.4) through the protocol;
// a sender without it (the default 0) and a sample without one read -1.
TEST(Telemetry, MemorySampleCarriesItsPeak) {
  MemorySample m;
  m.stage = 1;
  m.bytes = 5 << 20;
  m.peak = 9 << 20;
  pb::MemorySample wire;
  to_pb(m, &wire);
  EXPECT_EQ(from_pb(wire).peak, 9 << 20);
  wire.clear_peak();
  EXPECT_EQ(from_pb(wire).peak, -1);
  m.peak = -1;
  to_pb(m, &wire);
  EXPECT_EQ(from_pb(wire).peak, -1);
}

// A subscriber joining mid-run takes a snapshot and then sees every later
// message: snapshot events + received events == all events, no gap.
TEST(Telemetry, LateJoinerHasNoGapAfterItsSnapshot) {
  Publisher pub("run-late", fast_heartbeat());
  ControlServer ctl(nullptr, &pub);
  pub.set_control_endpoint(ctl.endpoint());
  const std::int64_t total = 150000;
  std::atomic<std::int64_t> sent{0};
  std::thread producer([&] {
    for (std::int64_t i = 0; i < total; ++i) {
      pub.on_event(event(i));
      sent = i + 1;
      if (i % 500 == 0) std::this_thread::sleep_for(1ms);
    }
    pub.status(RunStatus::Finished);
  });
  while (sent < total / 5) std::this_thread::sleep_for(1ms);

  Subscriber sub(pub.endpoint());
  auto hb = sub.wait_connected(3s);
  ASSERT_TRUE(hb);
  ASSERT_EQ(sub.control_endpoint(), ctl.endpoint());
  ControlClient client(sub.control_endpoint(), "late");
  auto reply = client.snapshot(3s);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->code(), pb::OK);
  const auto& snap = reply->snapshot();
  sub.apply_snapshot(hb->envelope.run_id(), snap);
  std::uint64_t from_snapshot = snap.events(), stage_sum = 0;
  for (const auto& s : snap.stages()) stage_sum += s.events();
  EXPECT_EQ(stage_sum, from_snapshot);
  EXPECT_GT(from_snapshot, 0u);
  bool sent_all_before = sent == total;

  std::uint64_t received = 0;
  for (;;) {
    auto m = sub.receive(3s);
    ASSERT_TRUE(m);
    if (m->topic == Topic::Events) received += m->envelope.events().events_size();
    if (m->topic == Topic::Status && m->envelope.status().state() == pb::FINISHED) break;
  }
  producer.join();
  EXPECT_EQ(sub.stats().gaps, 0u) << "missed " << sub.stats().missed;
  EXPECT_EQ(from_snapshot + received, static_cast<std::uint64_t>(total));
  EXPECT_FALSE(sent_all_before) << "the subscriber joined too late to test anything";
}

// A subscriber that does not read loses messages at its high-water mark
// and counts them as gaps; the publisher never waits for it.
TEST(Telemetry, SlowSubscriberCountsGapsAndNeverStallsThePublisher) {
  PublisherOptions o = fast_heartbeat();
  o.send_hwm = 20;
  o.max_batch = 16;
  Publisher pub("run-slow", o);
  SubscriberOptions so;
  so.receive_hwm = 20;
  so.topics = {Topic::Events, Topic::Status};
  Subscriber sub(pub.endpoint(), so);
  ASSERT_TRUE(sub.wait_connected(3s));

  const int n = 200000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    pub.on_event(event(i));
    if (i % 64 == 0) pub.flush();  // many small messages, queues fill up
  }
  pub.status(RunStatus::Finished);
  pub.flush();
  double publish_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(publish_s, 20.0);  // it finished at all while nobody read

  // Drain what the queues kept; heartbeats keep coming, so stop once
  // only heartbeats arrive.
  std::uint64_t received = 0;
  auto last_data = std::chrono::steady_clock::now();
  for (;;) {
    auto m = sub.receive(1s);
    if (!m) break;
    if (m->topic != Topic::Heartbeat) last_data = std::chrono::steady_clock::now();
    if (m->topic == Topic::Events) received += m->envelope.events().events_size();
    if (m->topic == Topic::Status && m->envelope.status().state() == pb::FINISHED) break;
    if (std::chrono::steady_clock::now() - last_data > 300ms) break;
  }
  EXPECT_GT(sub.stats().gaps, 0u);
  EXPECT_GT(sub.stats().missed, 0u);
  EXPECT_LT(received, static_cast<std::uint64_t>(n));
  EXPECT_GT(pub.stats().messages, sub.stats().messages);
}

TEST(Telemetry, BindsLoopbackUnlessToldOtherwise) {
  PublisherOptions o;
  o.endpoint = "tcp://0.0.0.0:*";
  EXPECT_THROW(Publisher("x", o), std::invalid_argument);
  o.allow_remote = true;
  EXPECT_THROW(Publisher("x", o), std::invalid_argument);  // and only with CURVE (test_curve.cpp)
  EXPECT_TRUE(is_local_endpoint("tcp://127.0.0.1:5"));
  EXPECT_TRUE(is_local_endpoint("tcp://localhost:5"));
  EXPECT_TRUE(is_local_endpoint("tcp://[::1]:5"));
  EXPECT_FALSE(is_local_endpoint("tcp://10.0.0.1:5"));
  EXPECT_FALSE(is_local_endpoint("tcp://*:5"));
}

TEST(Telemetry, EndpointsFileNamesBothSockets) {
  std::string file = "/tmp/pw_ipc_endpoints_" + std::to_string(::getpid()) + ".json";
  write_endpoints_file(file, "r1", "tcp://127.0.0.1:1", "tcp://127.0.0.1:2");
  auto j = nlohmann::json::parse(std::ifstream(file));
  EXPECT_EQ(j["run_id"], "r1");
  EXPECT_EQ(j["telemetry"], "tcp://127.0.0.1:1");
  EXPECT_EQ(j["control"], "tcp://127.0.0.1:2");
  std::remove(file.c_str());
}

}  // namespace
}  // namespace pw::ipc
