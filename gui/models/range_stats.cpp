#include "gui/models/range_stats.h"
#include "core/events/bubble.h"
#include "core/events/event_kinds.h"

#include <algorithm>

#include "gui/models/run_model.h"

namespace pw::gui {

RangeStats range_stats(const RunModel& run, std::int64_t t0, std::int64_t t1) {
  RangeStats r;
  if (t1 < t0) std::swap(t0, t1);
  r.t0 = t0;
  r.t1 = t1;
  const std::int64_t width = t1 - t0;
  std::int64_t busy_total = 0;
  for (int s = 0; s < run.stageCount(); ++s) {
    StageRangeStats st;
    for (int row = 0; row < kTrackRowCount; ++row) {
      const EventTrack& tr = run.track(s, static_cast<TrackRow>(row));
      std::size_t lo = tr.first_ending_after(t0), hi = tr.first_starting_at_or_after(t1);
      // Per-kind time needs every event in the window; the two binary
      // searches keep the scan to exactly those.
      for (std::size_t i = lo; i < hi; ++i) {
        std::int64_t a = std::max(tr.start(i), t0), b = std::min(tr.end(i), t1);
        if (b <= a) continue;
        ++st.events;
        std::int64_t d = b - a;
        st.kind_ns[static_cast<int>(tr.kind(i))] += d;
        if (is_busy(tr.kind(i))) st.busy_ns += d;
      }
    }
    st.busy_fraction = busy_fraction(static_cast<double>(st.busy_ns), static_cast<double>(width));
    for (int k = 0; k < kEventKindCount; ++k) r.kind_ns[k] += st.kind_ns[k];
    busy_total += st.busy_ns;
    r.stages.push_back(st);
  }
  int n = run.stageCount();
  r.bubble_fraction = bubble_fraction(static_cast<double>(busy_total), n, static_cast<double>(width));
  r.busy_fraction = n > 0 && width > 0 ? 1.0 - r.bubble_fraction : 0;
  const auto& c = run.completions();
  r.microbatches_completed = std::upper_bound(c.begin(), c.end(), t1) - std::lower_bound(c.begin(), c.end(), t0);
  return r;
}

}  // namespace pw::gui
