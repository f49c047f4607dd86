#include "gui/models/track_lod.h"

#include <algorithm>
#include <bit>

namespace pw::gui {

void TrackLod::clear() {
  levels_.clear();
  shift_ = 10;
  origin_ = 0;
  has_origin_ = false;
  slot_of_.fill(0);
  slots_used_ = 0;
}

int TrackLod::slotOf(EventKind k) {
  auto& s = slot_of_[static_cast<int>(k)];
  if (s == 0) {
    if (slots_used_ < kSlots) slot_kind_[slots_used_++] = k;
    s = static_cast<std::int8_t>(slots_used_);  // stored +1: 0 means unseen
  }
  return s - 1;
}

void TrackLod::coarsen() {
  // Every level becomes the next coarser one (bucket i = buckets 2i and
  // 2i + 1), in place: the levels keep their capacity, so a track that
  // grows again after this writes memory it already has. (Dropping level 0
  // and regrowing level 1 reallocated and faulted in ~1 MB per track, in
  // step for every track, while the painter waited on the buckets' lock.)
  for (auto& v : levels_) {
    const std::size_t n = (v.size() + 1) / 2;
    for (std::size_t i = 0; i < n; ++i) {
      Bucket b = v[2 * i];
      if (2 * i + 1 < v.size())
        for (int k = 0; k < kSlots; ++k) b[k] += v[2 * i + 1][k];
      v[i] = b;
    }
    v.resize(n);
  }
  // The top (one bucket) now repeats the level below it.
  if (levels_.size() > 1) levels_.pop_back();
  ++shift_;
}

void TrackLod::ensure(std::size_t b0) {
  while (b0 >= kMaxBuckets) {
    coarsen();
    b0 >>= 1;
  }
  const std::size_t n0 = std::max(levels_.empty() ? std::size_t{0} : levels_[0].size(), b0 + 1);
  const std::size_t count = static_cast<std::size_t>(std::bit_width(n0 - 1)) + 1;  // down to one bucket
  for (std::size_t l = 0; l < count; ++l) {
    if (l == levels_.size()) {
      // A new top: its one bucket holds everything the old top held. Its
      // whole capacity is reserved now (address space; pages are touched
      // as buckets are used), so growing never reallocates.
      const Bucket top = l == 0 ? Bucket{} : levels_[l - 1][0];
      levels_.emplace_back();
      levels_.back().reserve(std::max<std::size_t>(1, kMaxBuckets >> l));
      levels_.back().push_back(top);
    }
    const std::size_t want = ((n0 - 1) >> l) + 1;
    if (levels_[l].size() < want) levels_[l].resize(want, Bucket{});
  }
}

void TrackLod::addToBucket(std::size_t b0, double ns, int slot) {
  for (std::size_t l = 0; l < levels_.size(); ++l) levels_[l][b0 >> l][slot] += ns;
}

void TrackLod::add(std::int64_t start, std::int64_t end, EventKind kind) {
  if (!has_origin_) {
    // A millisecond before the first event (a track arrives nearly in order);
    // anything earlier is clamped to the origin.
    origin_ = std::max<std::int64_t>(0, start - (std::int64_t{1} << 20));
    has_origin_ = true;
  }
  start = std::max(start, origin_) - origin_;
  end -= origin_;
  if (end <= start) return;
  const int slot = slotOf(kind);
  while (((end - 1) >> shift_) - (start >> shift_) >= kMaxSpan) coarsen();
  ensure(static_cast<std::size_t>((end - 1) >> shift_));
  // Levels may have shifted: recompute the bucket range at the final width.
  std::size_t b = static_cast<std::size_t>(start >> shift_), last = static_cast<std::size_t>((end - 1) >> shift_);
  const std::int64_t width = std::int64_t{1} << shift_;
  for (; b <= last; ++b) {
    std::int64_t lo = std::max<std::int64_t>(start, static_cast<std::int64_t>(b) * width);
    std::int64_t hi = std::min<std::int64_t>(end, static_cast<std::int64_t>(b + 1) * width);
    addToBucket(b, static_cast<double>(hi - lo), slot);
  }
}

}  // namespace pw::gui
