#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/events/event.h"

namespace pw::gui {

class RunModel;

// Statistics of a time window [t0, t1): events are clipped to it.
struct StageRangeStats {
  std::array<std::int64_t, kEventKindCount> kind_ns{};  // time per kind inside the window
  std::int64_t busy_ns = 0;                             // compute kinds (forward, backward, ...)
  std::int64_t events = 0;                              // events overlapping the window
  double busy_fraction = 0;
};

struct RangeStats {
  std::int64_t t0 = 0, t1 = 0;
  std::vector<StageRangeStats> stages;
  std::array<std::int64_t, kEventKindCount> kind_ns{};  // summed over stages
  double busy_fraction = 0;    // over all stages
  double bubble_fraction = 0;  // 1 - busy
  std::int64_t microbatches_completed = 0;
};

RangeStats range_stats(const RunModel& run, std::int64_t t0, std::int64_t t1);

}  // namespace pw::gui
