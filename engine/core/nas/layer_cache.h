#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/nas/device_cache_plan.h"
#include "core/nas/eviction.h"

namespace pw::nas {

// The device-resident subset of one stage's supernet candidates. All
// candidates live in host memory; a candidate is loaded (weights and
// optimizer state) over the host link before a subnet uses it, and written
// back when evicted after an update. Loads queue FIFO on the host->device
// channel, write-backs on device->host. Eviction happens when space is
// needed, by `Eviction` rule (least recently used, or Belady's next use
// farthest), never a pinned candidate (a subnet between its forward and its
// update) nor one the caller protects (needed by a predicted upcoming
// subnet). A prefetch does not weigh a victim's next use against that of
// what it loads: under CSP a later, eligible subnet overtakes an earlier,
// blocked one, so sequence order misjudges which is needed first; the
// caller's protected list (the policy's own prediction) decides that.
class LayerCache {
 public:
  using Item = CacheItem;
  // Called for every transfer: (is_load, key, start_ns, end_ns, bytes).
  using TransferFn = std::function<void(bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t)>;

  LayerCache(std::int64_t capacity_bytes, double host_link_gbps, TransferFn on_transfer = {});
  // Belady needs the next uses (kept by the caller, who consumes steps as
  // they start); without them the rule is LRU.
  void set_eviction(Eviction rule, const NextUse* next_use);
  Eviction eviction() const { return rule_; }

  // Time at which all items are usable if the missing ones are requested
  // now (urgent: may evict anything unpinned outside `items`, and may
  // exceed the capacity when even that is not enough).
  std::int64_t ensure(const std::vector<Item>& items, std::int64_t now);
  // Loads missing items ahead of need if they fit without evicting pinned
  // or protected ones; false when they do not fit (nothing is loaded then).
  bool prefetch(const std::vector<Item>& items, std::int64_t now, const std::vector<std::int64_t>& protect);
  // Resident (loaded, or loading and finished) by time t.
  bool resident_by(std::int64_t key, std::int64_t t) const;
  bool present(std::int64_t key) const { return map_.count(key) > 0; }
  // Whether `items` could be made resident without evicting a pinned
  // candidate (always true when nothing is pinned: then ensure() may
  // exceed the budget for a single subnet larger than it).
  bool can_fit(const std::vector<Item>& items) const;
  // Carries out one step of a CachePlan: writes `evict` back (each must be
  // unpinned), then loads `load`.
  void apply(const CacheStep& step, std::int64_t now);
  void pin(const std::vector<Item>& items, std::int64_t now);
  void unpin(const std::vector<Item>& items, bool dirty);

  std::int64_t used_bytes() const { return used_; }
  std::int64_t peak_bytes() const { return peak_; }
  std::int64_t capacity() const { return capacity_; }
  std::uint64_t loads() const { return loads_; }
  std::uint64_t load_bytes() const { return load_bytes_; }
  std::uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::int64_t resident = 0, transfer = 0, ready_at = 0, last_use = 0;
    int pins = 0;
    bool dirty = false;
  };
  // Evicts until `need` more bytes fit. Unless forced, fails (evicting
  // nothing) when that is impossible.
  bool make_room(std::int64_t need, std::int64_t now, const std::vector<std::int64_t>& keep, bool force);
  void evict(std::int64_t key, std::int64_t now);
  std::int64_t next_use(std::int64_t key) const;
  void load(const Item& it, std::int64_t now);
  std::int64_t transfer_ns(std::int64_t bytes) const;

  std::int64_t capacity_;
  double gbps_;
  TransferFn on_transfer_;
  std::unordered_map<std::int64_t, Entry> map_;
  std::int64_t used_ = 0, peak_ = 0;
  std::int64_t in_free_ = 0, out_free_ = 0;
  std::uint64_t loads_ = 0, load_bytes_ = 0, evictions_ = 0;
  std::int64_t tick_ = 0;
  Eviction rule_ = Eviction::Lru;
  const NextUse* next_use_ = nullptr;
};

}  // namespace pw::nas
