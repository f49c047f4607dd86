#pragma once
#include <functional>
#include <map>
#include <vector>

#include "core/events/run_records.h"
#include "core/nas/subnet_observer.h"

namespace pw::nas {

// Turns the CSP observer stream (simulator or trainer) into the run
// records the recorder (db) and the telemetry publisher (ipc) store:
// subnet choices, per-(subnet, stage) phases, and wait edges "waiter waits
// for waited_for because of layer l at stage s" with the time they began and
// the time they were resolved (the waiter's forward there started, or a
// different blocker replaced this one). Edges are delivered once resolved;
// finish() delivers the rest unresolved (resolved_ns = -1).
class SubnetRecorder final : public SubnetObserver {
 public:
  struct Sinks {
    std::function<void(int id, const std::vector<int>& choices)> subnet;
    std::function<void(const pw::SubnetState&)> state;
    std::function<void(const pw::SubnetEdge&)> edge;
  };
  explicit SubnetRecorder(Sinks sinks) : sinks_(std::move(sinks)) {}

  void on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) override;
  void on_state(int id, nas::SubnetState state, int stage, std::int64_t t_ns) override;
  void on_wait(const SubnetWait& w) override;
  void finish();

  static SubnetPhase phase(nas::SubnetState s);  // Waiting -> Blocked, Update -> Backward
  std::size_t states() const { return states_; }
  std::size_t edges() const { return edges_; }

 private:
  void close(std::map<std::pair<int, int>, pw::SubnetEdge>::iterator it, std::int64_t t);
  Sinks sinks_;
  std::map<std::pair<int, int>, pw::SubnetEdge> open_;  // (waiter, stage) -> edge
  std::size_t states_ = 0, edges_ = 0;
};

}  // namespace pw::nas
