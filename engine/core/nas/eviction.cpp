#include "core/nas/eviction.h"

#include <algorithm>
#include <tuple>

namespace pw::nas {

const char* to_string(Eviction e) { return e == Eviction::Belady ? "belady" : "lru"; }

NextUse::NextUse(const std::vector<std::vector<std::int64_t>>& uses) : consumed_(uses.size(), false) {
  for (int b = 0; b < static_cast<int>(uses.size()); ++b)
    for (std::int64_t key : uses[b]) {
      auto& s = users_[key].steps;
      if (s.empty() || s.back() != b) s.push_back(b);
    }
}

void NextUse::consume(int b) {
  if (b >= 0 && b < static_cast<int>(consumed_.size())) consumed_[b] = true;
}

std::int64_t NextUse::next(std::int64_t key) const {
  auto it = users_.find(key);
  if (it == users_.end()) return kNever;
  const Users& u = it->second;
  // Consumed steps only accumulate, so the scan position only moves on:
  // amortised O(1).
  while (u.first < u.steps.size() && consumed_[u.steps[u.first]]) ++u.first;
  return u.first < u.steps.size() ? u.steps[u.first] : kNever;
}

void order_for_eviction(std::vector<EvictionCandidate>& c, Eviction rule) {
  if (rule == Eviction::Belady)
    std::sort(c.begin(), c.end(), [](const EvictionCandidate& a, const EvictionCandidate& b) {
      return std::tie(b.next_use, a.last_use, a.key) < std::tie(a.next_use, b.last_use, b.key);
    });
  else
    std::sort(c.begin(), c.end(), [](const EvictionCandidate& a, const EvictionCandidate& b) {
      return std::tie(a.last_use, a.key) < std::tie(b.last_use, b.key);
    });
}

}  // namespace pw::nas
