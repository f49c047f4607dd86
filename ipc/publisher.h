#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/events/event.h"
#include "core/events/run_recorder.h"
#include "core/events/run_records.h"
#include "ipc/curve.h"
#include "ipc/endpoints.h"
#include "ipc/protocol.h"

namespace pw::ipc {

struct PublisherOptions {
  std::string endpoint = kDefaultBind;
  bool allow_remote = false;  // bind a non-loopback address (needs `curve` too)
  std::optional<CurveServer> curve;
  // Messages queued per subscriber before ZeroMQ drops for that one: a
  // slow subscriber loses messages (and counts the gap), the run never
  // waits for it.
  int send_hwm = 10000;
  std::size_t max_batch = 1024;  // events (or samples) per message
  std::chrono::milliseconds heartbeat{200};
  std::string control_endpoint;  // advertised in heartbeats
  // Subscriptions are handled by the publisher itself (XPUB, manual): only
  // "" (everything) and the protocol's topic names are accepted, so what a
  // subscriber can make the socket hold is at most kTopicCount + 1 entries
  // per connection. A frame over max_frame_bytes drops that peer's
  // connection before anything is allocated for it (ZeroMQ checks the
  // announced size). The handshake passes the same check: 64 bytes take a
  // NULL-mechanism READY and every topic; CURVE's handshake needs ~300, so
  // with CURVE (only key-holding clients get that far) 4096 is used.
  std::int64_t max_frame_bytes = 64;
  std::int64_t max_frame_bytes_curve = 4096;
  int receive_hwm = 100;  // subscription frames queued per connection
  // libzmq stores every subscription a connection sent, manual mode
  // included, until that connection closes (~1 KiB per made-up one), so a
  // TCP connection that sends more than a subscriber ever needs is closed
  // (ipc/connection_guard.h): past `subscriber_burst_bytes` plus
  // `subscriber_bytes_per_s` of its age. 0 turns the guard off.
  std::uint64_t subscriber_burst_bytes = 64 * 1024;
  std::uint64_t subscriber_bytes_per_s = 1024;
};

// Telemetry publisher (ZeroMQ PUB) for one run. Every method may be called
// from any thread and only queues; a sender thread batches what is queued
// into Envelopes (per-topic sequence numbers), sends them without ever
// blocking, and sends a heartbeat every `heartbeat`. Records queued while
// the sender is busy go out together, so batches grow under load and
// latency stays low when idle.
class Publisher final : public RunRecorder {
 public:
  // Binds before returning (throws std::invalid_argument / runtime_error).
  explicit Publisher(std::string run_id, PublisherOptions options = {});
  ~Publisher() override;  // sends what is queued, then closes
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  const std::string& endpoint() const;  // as bound, port resolved
  using RunRecorder::endpoint;           // the recorder's "endpoint announced" hook
  const std::string& run_id() const;

  // What the run is; carried in every status message and snapshot.
  void set_run_info(const std::string& job_name, int stages, const std::string& source, const std::string& db_path = "");
  void set_control_endpoint(const std::string& endpoint);

  void on_event(const Event& e) override;
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override;
  void memory(const MemorySample& m) override;
  void throughput(const ThroughputSample& t) override;
  void migration(const Migration& m) override;
  void subnet_state(const SubnetState& s) override;
  void subnet_edge(const SubnetEdge& e) override;
  void log(const LogRecord& l) override;
  void plan(int version, std::int64_t t_ns, const std::string& reason, const nlohmann::json& plan) override;
  void status(RunStatus s, const std::string& reason = "");
  void paused(bool paused) override;  // status PAUSED / RUNNING

  // Blocks until everything queued so far has been handed to ZeroMQ.
  void flush() override;
  // The final status, then everything queued handed to ZeroMQ.
  void finish(RunStatus status, const std::string& reason) override {
    this->status(status, reason);
    flush();
  }

  // The run as published so far and the last seq of every topic it
  // includes (for late joiners; see ipc/pipewright.proto). Thread-safe.
  pb::Snapshot snapshot() const;

  struct Stats {
    std::uint64_t messages = 0, events = 0, bytes = 0;
    std::uint64_t would_block = 0;  // sends ZeroMQ refused (HWM on every pipe)
    std::uint64_t subscriptions = 0;          // accepted (subscribe and unsubscribe)
    std::uint64_t refused_subscriptions = 0;  // not "" or a topic name: ignored
    std::uint64_t closed_connections = 0;     // sent more than a subscriber needs (connection_guard.h)
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw::ipc
