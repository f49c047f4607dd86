// Telemetry figures, each against raw ZeroMQ in this process:
//  - events/s from a Publisher to a Subscriber on loopback with nothing
//    lost (HWM 0: unbounded queues) vs raw PUB/SUB of the same bytes;
//  - end-to-end latency p50/p99 at 10k events/s vs raw PUB/SUB, one
//    message per event.
#include <algorithm>
#include <cstring>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "bench_quick.h"
#include "ipc/publisher.h"
#include "ipc/subscriber.h"

using namespace pw;
using namespace pw::ipc;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

Event make(std::int64_t i) {
  Event e;
  e.stage = static_cast<std::int32_t>(i % 8);
  e.kind = static_cast<EventKind>(i % 3);
  e.start_ns = i * 10000;
  e.end_ns = e.start_ns + 9000;
  e.microbatch = static_cast<std::int32_t>(i % 32);
  e.first_layer = 0;
  e.last_layer = 5;
  e.bytes = 1 << 20;
  return e;
}

struct Throughput {
  double events_per_s;
  std::uint64_t received, gaps;
  double bytes_per_event;
};

Throughput telemetry_throughput(std::int64_t n) {
  PublisherOptions po;
  po.send_hwm = 0;  // unbounded: nothing dropped
  po.heartbeat = 20ms;
  Publisher pub("bench", po);
  SubscriberOptions so;
  so.receive_hwm = 0;
  so.topics = {Topic::Events, Topic::Status};
  Subscriber sub(pub.endpoint(), so);
  sub.wait_connected(5s);
  std::uint64_t received = 0;
  Clock::time_point t_end;
  std::thread reader([&] {
    for (;;) {
      auto m = sub.receive(5s);
      if (!m) break;
      if (m->topic == Topic::Events) received += m->envelope.events().events_size();
      if (m->topic == Topic::Status) {
        t_end = Clock::now();
        break;
      }
    }
  });
  auto t0 = Clock::now();
  for (std::int64_t i = 0; i < n; ++i) pub.on_event(make(i));
  pub.status(RunStatus::Finished);
  reader.join();
  auto st = pub.stats();
  return {n / std::chrono::duration<double>(t_end - t0).count(), received, sub.stats().gaps,
          static_cast<double>(st.bytes) / std::max<std::uint64_t>(1, st.events)};
}

// Raw PUB/SUB moving the same bytes in 1024-event messages.
double raw_throughput(std::int64_t n, std::size_t bytes_per_event) {
  zmq::socket_t pub(context(), zmq::socket_type::pub), sub(context(), zmq::socket_type::sub);
  pub.set(zmq::sockopt::sndhwm, 0);
  sub.set(zmq::sockopt::rcvhwm, 0);
  auto ep = bind_socket(pub, "tcp://127.0.0.1:*", false);
  sub.connect(ep);
  sub.set(zmq::sockopt::subscribe, "");
  std::string payload(bytes_per_event * 1024, 'x');
  // Wait for the subscription.
  for (;;) {
    pub.send(zmq::buffer(std::string("sync")));
    zmq::message_t m;
    if (sub.recv(m, zmq::recv_flags::dontwait)) break;
    std::this_thread::sleep_for(1ms);
  }
  zmq::message_t drain;
  while (sub.recv(drain, zmq::recv_flags::dontwait)) {
  }
  std::int64_t msgs = n / 1024;
  Clock::time_point t_end;
  std::thread reader([&] {
    std::int64_t got = 0;
    zmq::message_t m;
    while (got < msgs) {
      if (!sub.recv(m)) break;
      if (m.size() == payload.size()) ++got;
    }
    t_end = Clock::now();
  });
  auto t0 = Clock::now();
  for (std::int64_t i = 0; i < msgs; ++i) pub.send(zmq::buffer(payload));
  reader.join();
  return msgs * 1024 / std::chrono::duration<double>(t_end - t0).count();
}

struct Latency {
  double p50_us, p99_us;
  std::size_t samples;
};
Latency percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {0, 0, 0};
  return {v[v.size() / 2] / 1e3, v[v.size() * 99 / 100] / 1e3, v.size()};
}

// Events paced at `rate`/s; each carries its send time in start_ns.
Latency telemetry_latency(double rate, double seconds) {
  PublisherOptions po;
  po.heartbeat = 20ms;
  Publisher pub("lat", po);
  SubscriberOptions so;
  so.topics = {Topic::Events, Topic::Status};
  Subscriber sub(pub.endpoint(), so);
  sub.wait_connected(5s);
  std::vector<double> lat;
  std::thread reader([&] {
    for (;;) {
      auto m = sub.receive(5s);
      if (!m || m->topic == Topic::Status) break;
      auto t = now_ns();
      if (m->topic == Topic::Events)
        for (const auto& e : m->envelope.events().events()) lat.push_back(static_cast<double>(t - e.start_ns()));
    }
  });
  auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  auto next = Clock::now();
  std::int64_t n = static_cast<std::int64_t>(rate * seconds);
  for (std::int64_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(next);
    next += period;
    Event e = make(i);
    e.start_ns = now_ns();
    pub.on_event(e);
  }
  pub.status(RunStatus::Finished);
  reader.join();
  return percentiles(lat);
}

Latency raw_latency(double rate, double seconds) {
  zmq::socket_t pub(context(), zmq::socket_type::pub), sub(context(), zmq::socket_type::sub);
  auto ep = bind_socket(pub, "tcp://127.0.0.1:*", false);
  sub.connect(ep);
  sub.set(zmq::sockopt::subscribe, "");
  for (;;) {
    std::int64_t z = 0;
    pub.send(zmq::buffer(&z, sizeof z));
    zmq::message_t m;
    if (sub.recv(m, zmq::recv_flags::dontwait)) break;
    std::this_thread::sleep_for(1ms);
  }
  std::vector<double> lat;
  std::int64_t n = static_cast<std::int64_t>(rate * seconds);
  std::thread reader([&] {
    zmq::message_t m;
    for (;;) {
      if (!sub.recv(m)) break;
      std::int64_t t;
      std::memcpy(&t, m.data(), sizeof t);
      if (t < 0) break;
      if (t > 0) lat.push_back(static_cast<double>(now_ns() - t));
    }
  });
  auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  auto next = Clock::now();
  for (std::int64_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(next);
    next += period;
    std::int64_t t = now_ns();
    pub.send(zmq::buffer(&t, sizeof t));
  }
  std::int64_t end = -1;
  pub.send(zmq::buffer(&end, sizeof end));
  reader.join();
  return percentiles(lat);
}

}  // namespace

int main() {
  const std::int64_t n = bench::quick_or<std::int64_t>(50000, 1000000);
  auto tp = telemetry_throughput(n);
  double raw = raw_throughput(n, static_cast<std::size_t>(tp.bytes_per_event));
  std::printf("telemetry: %lld events Publisher -> Subscriber over tcp loopback, HWM 0 (unbounded)\n",
              static_cast<long long>(n));
  std::printf("  pw_ipc (protobuf, batched)      %10.0f events/s  received %llu, gaps %llu, %.1f bytes/event  target >= 300000: %s\n",
              tp.events_per_s, static_cast<unsigned long long>(tp.received), static_cast<unsigned long long>(tp.gaps),
              tp.bytes_per_event, tp.events_per_s >= 300000 && tp.received == static_cast<std::uint64_t>(n) ? "met" : "NOT met");
  std::printf("  baseline: raw PUB/SUB same bytes %9.0f events/s  -> pw_ipc at %.2fx of raw\n", raw, tp.events_per_s / raw);

  const double seconds = bench::quick_or(0.2, 2.0);
  auto lat = telemetry_latency(10000, seconds);
  auto rl = raw_latency(10000, seconds);
  std::printf("\nlatency at 10k events/s (%zu events): event queued -> decoded by the subscriber\n", lat.samples);
  std::printf("  pw_ipc                          p50 %8.1f us   p99 %8.1f us\n", lat.p50_us, lat.p99_us);
  std::printf("  baseline: raw PUB/SUB per event p50 %8.1f us   p99 %8.1f us  -> pw_ipc p50 %.2fx, p99 %.2fx of raw\n",
              rl.p50_us, rl.p99_us, lat.p50_us / rl.p50_us, lat.p99_us / rl.p99_us);
  return 0;
}
