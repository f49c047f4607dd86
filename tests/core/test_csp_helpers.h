#pragma once
// Shared by the CSP tests: small supernet jobs and an independent checker
// of causal order over an event log.
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/events/event.h"
#include "core/nas/nas_job.h"
#include "core/spec/job_spec.h"

namespace pw::nas::csptest {

inline nlohmann::json uniform_supernet_json(int stages, int layers, int choices, int subnets, int window = 32) {
  return {
      {"name", "unit"},
      {"model", {{"kind", "uniform"}, {"layers", layers}, {"fwd_ms", 1}, {"bwd_ms", 1}, {"activation_mb", 0}}},
      {"search_space",
       {{"builtin", "uniform"}, {"choice_layers", layers}, {"choices", choices}, {"fwd_ms", 1.0}, {"bwd_ms", 1.0},
        {"window", window}}},
      {"training", {{"iterations", subnets}, {"seed", 7}}},
      {"cluster", {{"devices", stages}, {"device", "v100-32g"}}},
      {"pipeline", {{"stages", stages}, {"schedule", "csp"}}}};
}

inline JobSpec uniform_supernet_job(int stages, int layers, int choices, int subnets, int window = 32) {
  return parse_job(uniform_supernet_json(stages, layers, choices, subnets, window));
}

struct Recorder : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

// Replays the log: for every candidate (layer, choice), the subnets using it
// must read it (forward start) in sequence order, and each read must come
// after the previous user's update ended, and each update after its own
// read. That is exactly what sequential training does. Returns the number
// of violations.
inline int causal_violations(const std::vector<Event>& events, const std::vector<Subnet>& seq,
                             const std::vector<StageSlots>& stages) {
  struct Use {
    std::int64_t read = -1, upd_start = -1, upd_end = -1;
  };
  std::map<std::pair<int, int>, std::map<int, Use>> uses;  // (layer, choice) -> subnet -> times
  for (const auto& e : events) {
    if (e.kind != EventKind::Forward && e.kind != EventKind::OptimizerStep) continue;
    const auto& r = stages[e.stage];
    for (int l = r.first; l <= r.last; ++l) {
      Use& u = uses[{l, seq[e.microbatch][l]}][e.microbatch];
      if (e.kind == EventKind::Forward) {
        if (u.read < 0 || e.start_ns < u.read) u.read = e.start_ns;
      } else {
        u.upd_start = e.start_ns;
        u.upd_end = e.end_ns;
      }
    }
  }
  int bad = 0;
  for (const auto& [cand, by_subnet] : uses) {
    // by_subnet is ordered by id: the sequential order.
    const Use* prev = nullptr;
    for (const auto& [id, u] : by_subnet) {
      if (u.read < 0 || u.upd_start < u.read) ++bad;
      if (prev && u.read < prev->upd_end) ++bad;
      prev = &u;
    }
  }
  return bad;
}

}  // namespace pw::nas::csptest
