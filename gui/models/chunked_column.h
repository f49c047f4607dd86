#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace pw::gui {

// A growable column stored in fixed chunks of 2^kShift elements. Appending
// never moves what is already stored: a std::vector doubles its capacity
// by copying every element into freshly faulted-in memory, and since every
// stage's tracks grow in step, a live run used to pay for all of them in
// one GUI-thread tick (e.g. ~110 ms at ~2M events) once per doubling: the
// late frames that set the live redraw interval's p99. Here a tick pays
// only for the chunks its own events fill. Indexing is two loads.
template <class T, int kShift = 14>
class ChunkedColumn {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << kShift;
  static constexpr std::size_t kMask = kChunk - 1;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](std::size_t i) const { return chunks_[i >> kShift][i & kMask]; }
  T& operator[](std::size_t i) { return chunks_[i >> kShift][i & kMask]; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(const T& v) {
    if ((size_ >> kShift) == chunks_.size()) chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunk));
    (*this)[size_++] = v;
  }
  // Grows (new elements are unspecified) or shrinks to n.
  void resize(std::size_t n) {
    const std::size_t need = (n + kMask) >> kShift;
    while (chunks_.size() < need) chunks_.push_back(std::make_unique_for_overwrite<T[]>(kChunk));
    chunks_.resize(need);
    size_ = n;
  }
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  // The first index in [lo, hi) whose element fails `pred`, for elements
  // partitioned by it (all passing ones first): std::partition_point.
  template <class Pred>
  std::size_t partition_point(std::size_t lo, std::size_t hi, Pred pred) const {
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (pred((*this)[mid])) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace pw::gui
