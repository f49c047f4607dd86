#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/curve.h"
#include "ipc/protocol.h"

namespace pw::ipc {

struct SubscriberOptions {
  std::vector<Topic> topics;  // empty: every topic (heartbeats always)
  int receive_hwm = 10000;    // messages queued here before ZeroMQ drops
  std::optional<CurveClient> curve;  // for a publisher beyond loopback
};

struct SubscriberStats {
  std::uint64_t messages = 0;   // accepted
  std::uint64_t events = 0;     // events in accepted messages
  std::uint64_t gaps = 0;       // places where messages were missed
  std::uint64_t missed = 0;     // messages missed, summed over gaps
  std::uint64_t stale = 0;      // already covered by the snapshot, or repeated
  std::uint64_t malformed = 0;  // not a valid Envelope for its topic
  std::uint64_t unknown = 0;    // unknown topic, body or newer protocol major
  std::uint64_t runs = 0;       // distinct run ids followed
};

// Telemetry subscriber (ZeroMQ SUB). Checks every message's per-topic
// sequence number and counts gaps; malformed and unknown messages are
// counted and dropped. Not thread-safe: use it on one thread.
class Subscriber {
 public:
  struct Message {
    Topic topic;
    pb::Envelope envelope;
  };

  explicit Subscriber(const std::string& endpoint, SubscriberOptions options = {});
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // The next accepted message, or nullopt when none came within timeout.
  std::optional<Message> receive(std::chrono::milliseconds timeout);

  // Checks one [topic, payload] frame pair as if received (receive() uses
  // it; public for tests and fuzzing). Updates the counters.
  std::optional<Message> decode(std::string_view topic, std::string_view payload);

  // Waits for the next heartbeat (one comes at least every heartbeat
  // period), skipping other messages (a snapshot taken next includes
  // them). From then on every subscription is live, so a snapshot
  // requested now leaves no gap. Returns the heartbeat (it names the
  // control endpoint).
  std::optional<Message> wait_connected(std::chrono::milliseconds timeout);

  // Continues from a snapshot of run `run_id`: later messages that it
  // already includes are dropped as stale, the rest must follow its seqs.
  void apply_snapshot(const std::string& run_id, const pb::Snapshot& snapshot);

  const SubscriberStats& stats() const { return stats_; }
  const std::string& run_id() const { return run_id_; }
  // The control endpoint advertised in the latest heartbeat, if any.
  const std::string& control_endpoint() const { return control_endpoint_; }
  // The publishing process's Pipewright version, from its heartbeats.
  const std::string& publisher_version() const { return publisher_version_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  SubscriberStats stats_;
  std::string run_id_;
  std::string control_endpoint_;
  std::string publisher_version_;
  std::uint64_t expected_[kTopicCount] = {};  // next seq per topic; 0 unknown
};

}  // namespace pw::ipc
