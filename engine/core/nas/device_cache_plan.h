#pragma once
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/nas/csp_policy.h"
#include "core/nas/eviction.h"
#include "core/nas/search_space.h"

namespace pw::nas {

// One candidate as a stage's device cache holds it.
struct CacheItem {
  std::int64_t key = 0;
  std::int64_t resident_bytes = 0;  // weights + gradients + optimizer state
  std::int64_t transfer_bytes = 0;  // weights + optimizer state (gradients are made on the device)
};

// The cache key of candidate `choice` of choice layer `layer` (the
// simulator's events carry it back as layer and choice).
inline constexpr std::int64_t kCandidateKeyStride = 1 << 16;
inline std::int64_t candidate_key(int layer, int choice) { return layer * kCandidateKeyStride + choice; }
inline int key_layer(std::int64_t key) { return static_cast<int>(key / kCandidateKeyStride); }
inline int key_choice(std::int64_t key) { return static_cast<int>(key % kCandidateKeyStride); }

// Bytes stage `stage` of `stages` has for candidates under a per-stage
// device budget: the budget less the frozen stem (stage 0) and head (last
// stage), which stay resident. <= 0 budget: unbounded.
std::int64_t cache_capacity(double budget_bytes, const SearchSpace& space, int stage, int stages);

// Per subnet of the sequence, the candidates it uses in the stage's choice
// layers, in layer order.
std::vector<std::vector<CacheItem>> stage_cache_steps(const SearchSpace& space, const std::vector<Subnet>& sequence,
                                                      const StageSlots& slots);

// What the cache does at step b (subnet b's candidates made resident).
struct CacheStep {
  std::vector<std::int64_t> evict;  // written back to the host first, in this order
  std::vector<CacheItem> load;      // then copied to the device
  std::vector<std::int64_t> keys;   // every candidate with state the step uses
  std::uint32_t hits = 0;           // of those, already resident
};

// A stage's device cache run over the subnet sequence in sequence order:
// at step b, subnet b's candidates become resident; room is made by
// evicting, by `rule`, among the resident candidates b does not use (Belady:
// next use farthest, through NextUse and order_for_eviction, the
// definitions the simulator's other cache uses too). Candidates without
// state (identity: 0 bytes) are neither uses nor loads. The plan depends on
// the sequence, the sizes and the capacity only, never on timing: a trainer
// and a simulation that follow it load exactly the same candidates, however
// their actions interleave. Throws std::invalid_argument when one subnet's
// candidates alone exceed the capacity.
struct CachePlan {
  std::int64_t capacity = 0;
  Eviction rule = Eviction::Belady;
  std::vector<CacheStep> steps;
  std::uint64_t uses = 0, hits = 0, loads = 0, evictions = 0;
  std::int64_t load_bytes = 0, peak_bytes = 0;
};
CachePlan plan_device_cache(const std::vector<std::vector<CacheItem>>& steps, std::int64_t capacity, Eviction rule);

// Follows a CachePlan while the stage runs (trainer and simulator alike).
// Steps run in sequence order and ahead of need (prefetch), at most
// `lookahead` past the oldest subnet whose forward has not started here.
// A step may run only when none of its victims is held: a candidate is
// held from its step until its subnet's update here is done (its weights
// sit in a forward's graph, then receive the gradient and the update), so
// a victim still in use makes the step wait. Every wait is on an older
// subnet (only executed steps hold, and steps run in order), so the oldest
// unfinished subnet never waits and the pipeline cannot deadlock.
class CacheSchedule {
 public:
  CacheSchedule(const CachePlan* plan, int lookahead);
  // Runs the next step if it may run now; nullptr otherwise.
  const CacheStep* advance();
  bool ready(int b) const { return b < next_; }  // subnet b's candidates are resident
  int next_step() const { return next_; }
  bool done() const { return next_ >= static_cast<int>(plan_->steps.size()); }
  // Whether the next step waits for a held victim (not for the lookahead).
  bool blocked_by_held() const;
  void started(int b);   // subnet b's forward started here
  void released(int b);  // subnet b's update here is done

 private:
  const CachePlan* plan_;
  int lookahead_;
  int next_ = 0;
  int oldest_unstarted_ = 0;
  std::vector<bool> started_;
  std::unordered_map<std::int64_t, int> held_;
};

}  // namespace pw::nas
