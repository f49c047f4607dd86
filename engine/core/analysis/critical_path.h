#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/events/event.h"

namespace pw {

// One link of the chain that sets an iteration's length: a stage computing
// (an action) or not computing for a cause.
struct PathStep {
  std::int32_t stage = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  bool compute = false;
  EventKind kind = EventKind::Idle;  // compute: the action
  IdleCause cause = IdleCause::HostOverhead;  // otherwise: why the stage waited
  std::int32_t microbatch = -1;
};

struct CriticalPath {
  int iteration = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // the steps tile [start, end)
  std::vector<PathStep> steps;            // in time order
  std::vector<std::int64_t> stage_ns;     // time on the path per stage
  std::int64_t compute_ns = 0;
  std::array<std::int64_t, kIdleCauseCount> cause_ns{};
  std::int64_t length_ns() const { return end_ns - start_ns; }
};

// Walks back from the stage that finishes `iteration` last: through its own
// actions and own waits (host overhead, optimizer, policy work), and, where
// it waited for a peer's activation or gradient, over the transfer to the
// peer's producing action. `attribution` must come from the same events
// with intervals kept (of every iteration the walk may reach: all, or at
// least this one and the one before).
CriticalPath critical_path(const std::vector<Event>& events, const Attribution& attribution, int iteration);

}  // namespace pw
