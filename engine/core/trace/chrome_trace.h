#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/events/event.h"

namespace pw {

// Streams events as a Chrome / Perfetto trace (JSON array format): one
// process per data-parallel replica (one for a run without replicas), one
// track (thread) per stage, plus a track per stage's copy engine for swaps,
// one for its outgoing transfers and one for its gradient all-reduce.
// Nothing is buffered, so it works for runs of millions of events.
class ChromeTraceWriter final : public EventSink {
 public:
  ChromeTraceWriter(std::ostream& out, int stages, const std::string& process_name);
  ~ChromeTraceWriter() override;
  void on_event(const Event& e) override;
  void on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) override;
  // A marker spanning stages (migrations, subnet hand-offs): a flow arrow
  // from one stage's track to another's.
  void flow(int id, int from_stage, std::int64_t from_ns, int to_stage, std::int64_t to_ns, const std::string& name);
  // The idle-time attribution (core/analysis): one more track per stage,
  // "stage N idle", drawn under its compute track, one slice per interval
  // named by its cause, so trace tools can query them.
  // `replica`: whose pipeline the intervals were attributed on.
  void declare_idle_tracks(int replica = 0);
  void on_idle(const IdleInterval& i, int replica = 0);
  void finish();

 private:
  void sep();
  int declare_replica(int replica);  // its pid
  std::ostream& out_;
  int stages_ = 0;
  std::string process_name_;
  std::vector<bool> declared_;  // by replica: its process and tracks written
  bool first_ = true;
  bool finished_ = false;
};

}  // namespace pw
