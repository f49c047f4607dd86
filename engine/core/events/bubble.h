#pragma once
#include <algorithm>

namespace pw {

// Busy and bubble as shares of stage-time: the one definition behind the
// simulator's result (span: its iteration time), a recorded run's figures
// in stats/replay/compare (span: first event to last) and the studio's
// range statistics (span: the selected window). Busy time is that of the
// is_busy kinds (core/events/event_kinds.h): compute, recompute, the
// optimizer step. docs/simulator.md, "Figures".

// One stage's busy share of a span, in [0, 1]; 0 for an empty span.
inline double busy_fraction(double busy_ns, double span_ns) {
  return span_ns > 0 ? std::clamp(busy_ns / span_ns, 0.0, 1.0) : 0.0;
}

// The bubble: the share of `stages` x `span_ns` of stage-time that no stage
// was busy, `1 - sum(busy) / (stages x span)`, in [0, 1]; 0 for no stages
// or an empty span. `busy_ns` is summed over the stages.
inline double bubble_fraction(double busy_ns, int stages, double span_ns) {
  if (stages <= 0 || span_ns <= 0) return 0.0;
  return std::clamp(1.0 - busy_ns / (static_cast<double>(stages) * span_ns), 0.0, 1.0);
}

}  // namespace pw
