#pragma once
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace pw::nas {

// Which resident supernet candidate to evict when a stage's device cache
// needs room.
enum class Eviction {
  Lru,     // least recently used first: needs no knowledge of the future
  Belady,  // next use farthest first: optimal when the use sequence is known,
           // as the subnet sequence of supernet training is
};
const char* to_string(Eviction e);

// When each candidate of one stage is used next. Steps are subnet ids (the
// sequence order); step b uses `uses[b]` (cache keys). A step is consumed
// once it has started at this stage (under CSP steps start slightly out of
// order, so consumption is per step, not a cursor). Shared by the supernet
// simulator and, later, the trainer's device cache.
class NextUse {
 public:
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  explicit NextUse(const std::vector<std::vector<std::int64_t>>& uses);
  // Step `b` started: its uses are no longer ahead.
  void consume(int b);
  // The first unconsumed step that uses `key`, or kNever.
  std::int64_t next(std::int64_t key) const;

 private:
  struct Users {
    std::vector<int> steps;  // ascending
    mutable std::size_t first = 0;  // steps before it are consumed
  };
  std::unordered_map<std::int64_t, Users> users_;
  std::vector<bool> consumed_;
};

// One resident, evictable candidate as the eviction rule sees it.
struct EvictionCandidate {
  std::int64_t key = 0;
  std::int64_t last_use = 0;  // a tick: larger is more recent
  std::int64_t next_use = NextUse::kNever;
};

// Sorts into the order to evict: LRU by last_use; Belady by next_use,
// farthest (or never) first, ties least recently used first.
void order_for_eviction(std::vector<EvictionCandidate>& candidates, Eviction rule);

}  // namespace pw::nas
