#include "core/nas/subnet_records.h"

namespace pw::nas {

SubnetPhase SubnetRecorder::phase(nas::SubnetState s) {
  switch (s) {
    case nas::SubnetState::Waiting: return SubnetPhase::Blocked;
    case nas::SubnetState::Forward: return SubnetPhase::Forward;
    case nas::SubnetState::Backward:
    case nas::SubnetState::Update: return SubnetPhase::Backward;  // the update closes its backward
    case nas::SubnetState::Done: return SubnetPhase::Done;
  }
  return SubnetPhase::Queued;
}

void SubnetRecorder::on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) {
  if (sinks_.subnet) sinks_.subnet(id, choices);
  ++states_;  // admitted into the pipeline
  if (sinks_.state) sinks_.state(pw::SubnetState{t_ns, id, 0, SubnetPhase::Queued});
}

void SubnetRecorder::on_state(int id, nas::SubnetState state, int stage, std::int64_t t_ns) {
  if (state == nas::SubnetState::Forward)
    if (auto it = open_.find({id, stage}); it != open_.end()) close(it, t_ns);
  if (state == nas::SubnetState::Update) return;  // same phase as the backward before it
  ++states_;
  if (sinks_.state) sinks_.state(pw::SubnetState{t_ns, id, stage, phase(state)});
}

void SubnetRecorder::on_wait(const SubnetWait& w) {
  auto key = std::make_pair(w.waiter, w.stage);
  if (auto it = open_.find(key); it != open_.end()) {
    if (it->second.waited_for == w.waited_for) return;
    close(it, w.t_ns);  // the blocker changed: a new edge
  }
  pw::SubnetEdge e;
  e.t_ns = w.t_ns;
  e.waiter = w.waiter;
  e.waited_for = w.waited_for;
  e.stage = w.stage;
  e.layer = w.layer;
  open_[key] = e;
}

void SubnetRecorder::close(std::map<std::pair<int, int>, pw::SubnetEdge>::iterator it, std::int64_t t) {
  it->second.resolved_ns = t;
  ++edges_;
  if (sinks_.edge) sinks_.edge(it->second);
  open_.erase(it);
}

void SubnetRecorder::finish() {
  for (auto& [key, e] : open_) {
    ++edges_;
    if (sinks_.edge) sinks_.edge(e);
  }
  open_.clear();
}

}  // namespace pw::nas
