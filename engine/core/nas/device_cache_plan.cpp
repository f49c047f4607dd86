#include "core/nas/device_cache_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace pw::nas {

std::int64_t cache_capacity(double budget_bytes, const SearchSpace& space, int stage, int stages) {
  if (budget_bytes <= 0) return INT64_MAX / 4;
  std::int64_t frozen = 0;
  if (stage == 0 && space.has_stem) frozen += static_cast<std::int64_t>(space.stem.param_bytes);
  if (stage == stages - 1 && space.has_head) frozen += static_cast<std::int64_t>(space.head.param_bytes);
  return std::max<std::int64_t>(0, std::llround(budget_bytes) - frozen);
}

std::vector<std::vector<CacheItem>> stage_cache_steps(const SearchSpace& space, const std::vector<Subnet>& sequence,
                                                      const StageSlots& slots) {
  std::vector<std::vector<CacheItem>> out;
  out.reserve(sequence.size());
  for (const auto& subnet : sequence) {
    out.emplace_back();
    for (int l = slots.first; l <= slots.last; ++l) {
      const auto& c = space.layers[l].candidates[subnet[l]];
      out.back().push_back({candidate_key(l, subnet[l]), c.resident_bytes(), c.transfer_bytes()});
    }
  }
  return out;
}

CachePlan plan_device_cache(const std::vector<std::vector<CacheItem>>& steps, std::int64_t capacity, Eviction rule) {
  CachePlan plan;
  plan.capacity = capacity;
  plan.rule = rule;
  std::vector<std::vector<std::int64_t>> uses;
  for (const auto& st : steps) {
    uses.emplace_back();
    for (const auto& it : st)
      if (it.resident_bytes > 0) uses.back().push_back(it.key);
  }
  NextUse next(uses);
  struct Resident {
    std::int64_t bytes = 0, last_use = 0;
  };
  std::unordered_map<std::int64_t, Resident> resident;
  std::int64_t used = 0, tick = 0;
  for (size_t b = 0; b < steps.size(); ++b) {
    CacheStep step;
    next.consume(static_cast<int>(b));
    std::int64_t need = 0, whole = 0;
    std::vector<CacheItem> missing;
    for (const auto& it : steps[b]) {
      if (it.resident_bytes <= 0) continue;
      if (std::find(step.keys.begin(), step.keys.end(), it.key) != step.keys.end()) continue;
      step.keys.push_back(it.key);
      whole += it.resident_bytes;
      if (resident.count(it.key)) {
        ++step.hits;
      } else {
        need += it.resident_bytes;
        missing.push_back(it);
      }
    }
    if (whole > capacity)
      throw std::invalid_argument("subnet " + std::to_string(b) + " needs " + std::to_string(whole) +
                                  " bytes of candidates on one stage, more than the cache's " +
                                  std::to_string(capacity));
    if (used + need > capacity) {
      std::vector<EvictionCandidate> victims;
      for (const auto& [k, r] : resident)
        if (std::find(step.keys.begin(), step.keys.end(), k) == step.keys.end())
          victims.push_back({k, r.last_use, rule == Eviction::Belady ? next.next(k) : NextUse::kNever});
      order_for_eviction(victims, rule);
      for (const auto& v : victims) {
        if (used + need <= capacity) break;
        used -= resident[v.key].bytes;
        resident.erase(v.key);
        step.evict.push_back(v.key);
      }
    }
    for (const auto& it : missing) {
      resident[it.key] = {it.resident_bytes, 0};
      used += it.resident_bytes;
      plan.load_bytes += it.transfer_bytes;
    }
    for (std::int64_t k : step.keys) resident[k].last_use = ++tick;
    plan.peak_bytes = std::max(plan.peak_bytes, used);
    step.load = std::move(missing);
    plan.uses += step.keys.size();
    plan.hits += step.hits;
    plan.loads += step.load.size();
    plan.evictions += step.evict.size();
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

CacheSchedule::CacheSchedule(const CachePlan* plan, int lookahead)
    : plan_(plan), lookahead_(std::max(1, lookahead)), started_(plan->steps.size(), false) {}

bool CacheSchedule::blocked_by_held() const {
  if (done()) return false;
  for (std::int64_t k : plan_->steps[next_].evict) {
    auto it = held_.find(k);
    if (it != held_.end() && it->second > 0) return true;
  }
  return false;
}

const CacheStep* CacheSchedule::advance() {
  if (done() || next_ >= oldest_unstarted_ + lookahead_ || blocked_by_held()) return nullptr;
  const CacheStep& step = plan_->steps[next_++];
  for (std::int64_t k : step.keys) ++held_[k];
  return &step;
}

void CacheSchedule::started(int b) {
  if (b < 0 || b >= static_cast<int>(started_.size())) return;
  started_[b] = true;
  while (oldest_unstarted_ < static_cast<int>(started_.size()) && started_[oldest_unstarted_]) ++oldest_unstarted_;
}

void CacheSchedule::released(int b) {
  if (b < 0 || b >= next_) return;
  for (std::int64_t k : plan_->steps[b].keys) --held_[k];
}

}  // namespace pw::nas
