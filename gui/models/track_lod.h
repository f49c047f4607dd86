#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/events/event.h"

namespace pw::gui {

// A track's bars pre-folded by time, so a zoomed-out timeline draws from
// a few buckets per pixel column instead of visiting bars: busy time per
// kind summed into buckets of 2^shift ns (level 0) and pairwise into
// coarser levels (level l: 2^(shift+l) ns), counted from origin() (a
// little before the first event: real runs stamp steady-clock ns, far from
// 0). Kept up to date as events are added, never rebuilt at paint time
// (LodIndex adds on a worker thread). Level 0 holds at most kMaxBuckets
// buckets, and no event covers more than kMaxSpan of them: a longer run or
// a longer event doubles the bucket width by dropping the finest level. An
// event costs at most ~2 x kMaxSpan + levels bucket updates: the finest
// level only serves views zoomed out past 4 buckets per pixel, where an
// event wider than kMaxSpan buckets is a bar many pixels wide anyway.
class TrackLod {
 public:
  static constexpr int kSlots = 4;  // kinds per track; more share the last slot
  static constexpr std::size_t kMaxBuckets = std::size_t{1} << 14;
  static constexpr std::int64_t kMaxSpan = 32;
  using Bucket = std::array<double, kSlots>;  // busy ns per slot

  void add(std::int64_t start_ns, std::int64_t end_ns, EventKind kind);
  void clear();

  int shift() const { return shift_; }
  // Bucket b of level l covers [origin + b * 2^(shift+l), origin + (b+1) * 2^(shift+l)).
  std::int64_t origin() const { return origin_; }
  int levels() const { return static_cast<int>(levels_.size()); }
  const std::vector<Bucket>& level(int l) const { return levels_[l]; }
  // The kind a slot stands for (the first kinds seen, in order).
  EventKind slotKind(int slot) const { return slot_kind_[slot]; }
  int slotsUsed() const { return slots_used_; }

 private:
  int slotOf(EventKind k);
  void addToBucket(std::size_t b0, double ns, int slot);
  void ensure(std::size_t b0);
  void coarsen();  // twice as wide: level 1 becomes level 0

  std::vector<std::vector<Bucket>> levels_;
  int shift_ = 10;  // 1 us buckets until the run or its events outgrow them
  std::int64_t origin_ = 0;
  bool has_origin_ = false;
  std::array<std::int8_t, kEventKindCount> slot_of_{};
  std::array<EventKind, kSlots> slot_kind_{};
  int slots_used_ = 0;
};

}  // namespace pw::gui
