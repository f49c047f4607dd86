#pragma once
#include <cstdint>
#include <vector>

#include "core/events/event.h"
#include "gui/models/chunked_column.h"

namespace pw::gui {

// Which row of a stage's lane an event kind is drawn in (its EventLane,
// core/events/event_kinds.h). Compute runs on one stream and never overlaps
// itself; swaps (copy engine), transfers (network) and the replicas'
// gradient all-reduce (collective stream) overlap compute, so each gets its
// own row.
enum class TrackRow : std::uint8_t { Compute = 0, Copy = 1, Network = 2, Collective = 3 };
constexpr int kTrackRowCount = 4;
TrackRow row_of(EventKind k);

// One row of one stage: events sorted by start, stored column-wise so the
// hot columns (start, end) are compact for binary search. Two derived
// columns make queries O(log n): the running maximum of end (the first bar
// reaching into a window), and the running sum of durations (busy time of
// any index range). Columns are chunked (ChunkedColumn): an append costs
// what it appends, never a copy of the whole track.
class EventTrack {
 public:
  std::size_t size() const { return start_.size(); }
  bool empty() const { return start_.empty(); }

  // Appends events (any order); keeps the columns sorted by start.
  void append(const std::vector<Event>& events);
  void clear();

  std::int64_t start(std::size_t i) const { return start_[i]; }
  std::int64_t end(std::size_t i) const { return end_[i]; }
  EventKind kind(std::size_t i) const { return static_cast<EventKind>(kind_[i]); }
  std::int32_t microbatch(std::size_t i) const { return microbatch_[i]; }
  std::int16_t chunk(std::size_t i) const { return chunk_[i]; }
  std::int32_t first_layer(std::size_t i) const { return first_layer_[i]; }
  std::int32_t last_layer(std::size_t i) const { return last_layer_[i]; }
  std::int64_t bytes(std::size_t i) const { return bytes_[i]; }
  Event event(std::size_t i) const;

  // First index whose event ends after t (the first one visible in a
  // window starting at t); size() if none.
  std::size_t first_ending_after(std::int64_t t) const;
  // First index whose event starts at or after t.
  std::size_t first_starting_at_or_after(std::int64_t t) const;
  // Sum of durations of events [from, to).
  std::int64_t duration_sum(std::size_t from, std::size_t to) const;
  // Largest end among events [0, i] (i < size()).
  std::int64_t max_end_through(std::size_t i) const { return max_end_[i]; }
  // Index of an event covering t, or -1.
  long long find_at(std::int64_t t) const;

  std::int64_t min_start() const { return start_.empty() ? 0 : start_.front(); }
  std::int64_t max_end() const { return max_end_.empty() ? 0 : max_end_.back(); }

 private:
  void push(const Event& e);
  void sort_tail(std::size_t from);
  void rebuild_derived(std::size_t from);

  ChunkedColumn<std::int64_t> start_, end_, bytes_;
  ChunkedColumn<std::int32_t> microbatch_, first_layer_, last_layer_;
  ChunkedColumn<std::int16_t> chunk_;
  ChunkedColumn<std::uint8_t> kind_;
  ChunkedColumn<std::int64_t> max_end_, dur_prefix_;  // dur_prefix_[i] = sum of durations [0, i)
};

}  // namespace pw::gui
