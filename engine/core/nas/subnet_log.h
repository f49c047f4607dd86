#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/events/event.h"
#include "core/events/line_tail.h"
#include "core/nas/subnet_observer.h"

namespace pw::nas {

// The record stream of one CSP trainer process (engine/runtime/nas): subnet
// admissions, states, wait edges and its events, one JSON object a line
// tagged by "r" (an event's line is the engine's event line,
// core/events/event_json.h, with "r": "event"; the subnet is its "mb"), so
// the launcher can follow the file while the worker appends to it and feed
// the same SubnetObserver / EventSink the simulator feeds (SubnetRecorder ->
// database and telemetry). Every line is flushed: a reader sees whole lines.
class SubnetLogWriter final : public SubnetObserver, public EventSink {
 public:
  explicit SubnetLogWriter(std::ostream& out) : out_(out) {}
  void on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) override;
  void on_state(int id, SubnetState state, int stage, std::int64_t t_ns) override;
  void on_wait(const SubnetWait& w) override;
  void on_event(const Event& e) override;
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override;

 private:
  void line(const std::string& s);
  std::ostream& out_;
};

// Replays one line to `obs` and `sink` (either may be null). Returns false
// for a line that is not a record of this format.
bool replay_subnet_log_line(const std::string& line, SubnetObserver* obs, EventSink* sink);

// Follows a file a SubnetLogWriter appends to (core/events/line_tail.h).
class SubnetLogTail {
 public:
  explicit SubnetLogTail(std::string file) : lines_(std::move(file)) {}
  // Replays the complete lines added since the last poll; returns how many.
  int poll(SubnetObserver* obs, EventSink* sink);
  int malformed() const { return malformed_; }

 private:
  LineTail lines_;
  int malformed_ = 0;
};

}  // namespace pw::nas
