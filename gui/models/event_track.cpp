#include "gui/models/event_track.h"

#include <algorithm>
#include <numeric>

#include "core/events/event_kinds.h"

namespace pw::gui {

TrackRow row_of(EventKind k) {
  switch (lane_of(k)) {
    case EventLane::Copy: return TrackRow::Copy;
    case EventLane::Link: return TrackRow::Network;
    case EventLane::Collective: return TrackRow::Collective;
    default: return TrackRow::Compute;
  }
}

void EventTrack::clear() { *this = EventTrack(); }

void EventTrack::push(const Event& e) {
  start_.push_back(e.start_ns);
  end_.push_back(std::max(e.end_ns, e.start_ns));
  bytes_.push_back(e.bytes);
  microbatch_.push_back(e.microbatch);
  first_layer_.push_back(e.first_layer);
  last_layer_.push_back(e.last_layer);
  chunk_.push_back(e.chunk);
  kind_.push_back(static_cast<std::uint8_t>(e.kind));
}

Event EventTrack::event(std::size_t i) const {
  Event e;
  e.start_ns = start_[i];
  e.end_ns = end_[i];
  e.bytes = bytes_[i];
  e.microbatch = microbatch_[i];
  e.first_layer = first_layer_[i];
  e.last_layer = last_layer_[i];
  e.chunk = chunk_[i];
  e.kind = kind(i);
  return e;
}

void EventTrack::append(const std::vector<Event>& events) {
  if (events.empty()) return;
  std::size_t old = size();
  std::int64_t min_new = events.front().start_ns;
  for (const auto& e : events) {
    push(e);
    min_new = std::min(min_new, e.start_ns);
  }
  // Sources deliver nearly in order, so only the tail from the first
  // out-of-order position is re-sorted.
  std::size_t from = old;
  if (old > 0 && min_new < start_[old - 1])
    from = start_.partition_point(0, old, [&](std::int64_t s) { return s <= min_new; });
  bool sorted = true;
  for (std::size_t i = from + 1; i < size() && sorted; ++i) sorted = start_[i - 1] <= start_[i];
  if (!sorted || from < old) sort_tail(from);
  rebuild_derived(from);
}

void EventTrack::sort_tail(std::size_t from) {
  std::size_t n = size() - from;
  std::vector<std::size_t> perm(n);
  std::iota(perm.begin(), perm.end(), from);
  std::stable_sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) { return start_[a] < start_[b]; });
  auto apply = [&](auto& col) {
    using T = std::decay_t<decltype(col[0])>;
    std::vector<T> tmp(n);
    for (std::size_t i = 0; i < n; ++i) tmp[i] = col[perm[i]];
    for (std::size_t i = 0; i < n; ++i) col[from + i] = tmp[i];
  };
  apply(start_);
  apply(end_);
  apply(bytes_);
  apply(microbatch_);
  apply(first_layer_);
  apply(last_layer_);
  apply(chunk_);
  apply(kind_);
}

void EventTrack::rebuild_derived(std::size_t from) {
  max_end_.resize(size());
  dur_prefix_.resize(size() + 1);
  if (from == 0) dur_prefix_[0] = 0;
  for (std::size_t i = from; i < size(); ++i) {
    max_end_[i] = i == 0 ? end_[i] : std::max(max_end_[i - 1], end_[i]);
    dur_prefix_[i + 1] = dur_prefix_[i] + (end_[i] - start_[i]);
  }
}

std::size_t EventTrack::first_ending_after(std::int64_t t) const {
  return max_end_.partition_point(0, max_end_.size(), [t](std::int64_t e) { return e <= t; });
}

std::size_t EventTrack::first_starting_at_or_after(std::int64_t t) const {
  return start_.partition_point(0, start_.size(), [t](std::int64_t s) { return s < t; });
}

std::int64_t EventTrack::duration_sum(std::size_t from, std::size_t to) const {
  to = std::min(to, size());
  return from >= to ? 0 : dur_prefix_[to] - dur_prefix_[from];
}

long long EventTrack::find_at(std::int64_t t) const {
  std::size_t i = first_ending_after(t);
  // Events starting after t cannot cover it; scan the few that overlap.
  for (; i < size() && start_[i] <= t; ++i)
    if (end_[i] > t || (end_[i] == start_[i] && start_[i] == t)) return static_cast<long long>(i);
  return -1;
}

}  // namespace pw::gui
