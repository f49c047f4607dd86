#include "core/nas/layer_cache.h"

#include <algorithm>
#include <cmath>

#include "core/cost/stage_cost.h"

namespace pw::nas {

LayerCache::LayerCache(std::int64_t capacity_bytes, double host_link_gbps, TransferFn on_transfer)
    : capacity_(capacity_bytes), gbps_(host_link_gbps), on_transfer_(std::move(on_transfer)) {}

std::int64_t LayerCache::transfer_ns(std::int64_t bytes) const {
  return std::llround(transfer_ms(static_cast<std::uint64_t>(bytes), gbps_, 0) * 1e6);
}

bool LayerCache::resident_by(std::int64_t key, std::int64_t t) const {
  auto it = map_.find(key);
  return it != map_.end() && it->second.ready_at <= t;
}

void LayerCache::set_eviction(Eviction rule, const NextUse* next_use) {
  rule_ = next_use ? rule : Eviction::Lru;
  next_use_ = next_use;
}

std::int64_t LayerCache::next_use(std::int64_t key) const {
  return next_use_ ? next_use_->next(key) : NextUse::kNever;
}

bool LayerCache::make_room(std::int64_t need, std::int64_t now, const std::vector<std::int64_t>& keep, bool force) {
  if (used_ + need <= capacity_) return true;
  std::vector<EvictionCandidate> victims;
  for (const auto& [k, e] : map_) {
    if (e.pins > 0 || std::find(keep.begin(), keep.end(), k) != keep.end()) continue;
    victims.push_back({k, e.last_use, rule_ == Eviction::Belady ? next_use(k) : NextUse::kNever});
  }
  order_for_eviction(victims, rule_);
  if (!force) {
    std::int64_t freeable = 0;
    for (const auto& v : victims) freeable += map_.at(v.key).resident;
    if (used_ - freeable + need > capacity_) return false;
  }
  for (const auto& v : victims) {
    if (used_ + need <= capacity_) break;
    evict(v.key, now);
  }
  return true;
}

void LayerCache::evict(std::int64_t k, std::int64_t now) {
  auto f = map_.find(k);
  if (f == map_.end()) return;
  Entry e = f->second;
  map_.erase(f);
  used_ -= e.resident;
  ++evictions_;
  if (e.dirty && e.transfer > 0) {  // write the updated weights and state back to host
    std::int64_t start = std::max({now, out_free_, e.ready_at});
    out_free_ = start + transfer_ns(e.transfer);
    if (on_transfer_) on_transfer_(false, k, start, out_free_, e.transfer);
  }
}

void LayerCache::apply(const CacheStep& step, std::int64_t now) {
  for (std::int64_t k : step.evict) evict(k, now);
  for (const auto& it : step.load)
    if (!map_.count(it.key)) load(it, now);
}

void LayerCache::load(const Item& it, std::int64_t now) {
  Entry e;
  e.resident = it.resident_bytes;
  e.transfer = it.transfer_bytes;
  e.last_use = ++tick_;
  if (it.transfer_bytes > 0) {
    std::int64_t start = std::max(now, in_free_);
    in_free_ = start + transfer_ns(it.transfer_bytes);
    e.ready_at = in_free_;
    ++loads_;
    load_bytes_ += static_cast<std::uint64_t>(it.transfer_bytes);
    if (on_transfer_) on_transfer_(true, it.key, start, in_free_, it.transfer_bytes);
  } else {
    e.ready_at = now;
  }
  map_[it.key] = e;
  used_ += e.resident;
  peak_ = std::max(peak_, used_);
}

std::int64_t LayerCache::ensure(const std::vector<Item>& items, std::int64_t now) {
  std::vector<std::int64_t> keep;
  std::int64_t need = 0;
  for (const auto& it : items) {
    keep.push_back(it.key);
    if (!map_.count(it.key)) need += it.resident_bytes;
  }
  make_room(need, now, keep, true);
  std::int64_t ready = now;
  for (const auto& it : items) {
    if (!map_.count(it.key)) load(it, now);
    Entry& e = map_[it.key];
    e.last_use = ++tick_;
    ready = std::max(ready, e.ready_at);
  }
  return ready;
}

bool LayerCache::prefetch(const std::vector<Item>& items, std::int64_t now, const std::vector<std::int64_t>& protect) {
  std::vector<std::int64_t> keep = protect;
  std::int64_t need = 0;
  for (const auto& it : items) {
    keep.push_back(it.key);
    if (!map_.count(it.key)) need += it.resident_bytes;
  }
  if (need == 0) return true;
  if (!make_room(need, now, keep, false)) return false;
  for (const auto& it : items)
    if (!map_.count(it.key)) load(it, now);
  return true;
}

bool LayerCache::can_fit(const std::vector<Item>& items) const {
  std::int64_t pinned = 0, need = 0;
  for (const auto& [k, e] : map_)
    if (e.pins > 0) pinned += e.resident;
  if (pinned == 0) return true;
  for (const auto& it : items) {
    auto f = map_.find(it.key);
    if (f == map_.end()) need += it.resident_bytes;
    else if (f->second.pins == 0) pinned += f->second.resident;  // will be pinned too
  }
  return pinned + need <= capacity_;
}

void LayerCache::pin(const std::vector<Item>& items, std::int64_t now) {
  for (const auto& it : items) {
    auto f = map_.find(it.key);
    if (f != map_.end()) {
      ++f->second.pins;
      f->second.last_use = ++tick_;
    }
  }
}

void LayerCache::unpin(const std::vector<Item>& items, bool dirty) {
  for (const auto& it : items) {
    auto f = map_.find(it.key);
    if (f == map_.end()) continue;
    if (f->second.pins > 0) --f->second.pins;
    f->second.dirty = f->second.dirty || dirty;
  }
}

}  // namespace pw::nas
