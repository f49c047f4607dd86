#pragma once
// The best slowest-stage time over ALL ways to cut a layer graph into k
// pipeline stages: chains of down-sets (node sets closed under
// predecessors) D1 c D2 c ... c Dk = all, stage s = Ds \ Ds-1.
// PipeDream's optimizer searches a subset of these (its antichain DAG's
// states), and a planner over one linear order a subset too, so this is a
// lower bound on both: a planner within x% of it is within x% of
// PipeDream's optimizer. Written independently of pw_core's planners (the
// tests use it as their reference; the profiles benchmark prints it).
#include <algorithm>
#include <bitset>
#include <limits>
#include <unordered_map>
#include <vector>

#include "core/model/layer_profile.h"

namespace pw::test {

class DownsetBound {
 public:
  static constexpr int kMaxLayers = 512;
  // Gives up (ok() false) past `max_states` down-sets.
  explicit DownsetBound(const ModelProfile& p, size_t max_states = 2'000'000) {
    using Set = std::bitset<kMaxLayers>;
    int n = p.size();
    if (n > kMaxLayers) return;
    auto producers = [&](int v) -> std::vector<int> {
      if (!p.inputs.empty()) return p.inputs[v];
      return v > 0 ? std::vector<int>{v - 1} : std::vector<int>{};
    };
    std::vector<Set> sets{Set()};
    std::unordered_map<Set, int> index{{Set(), 0}};
    weight_.push_back(0);
    std::vector<std::vector<int>> below(1);
    // Breadth-first by size, so every subset comes before its supersets.
    for (size_t i = 0; i < sets.size(); ++i) {
      for (int v = 0; v < n; ++v) {
        if (sets[i][v]) continue;
        bool ready = true;
        for (int u : producers(v)) ready = ready && sets[i][u];
        if (!ready) continue;
        Set next = sets[i];
        next[v] = true;
        auto [it, fresh] = index.emplace(next, static_cast<int>(sets.size()));
        if (fresh) {
          if (sets.size() >= max_states) return;
          sets.push_back(next);
          weight_.push_back(weight_[i] + p.layers[v].fwd_ms + p.layers[v].bwd_ms);
          below.emplace_back();
        }
        below[it->second].push_back(static_cast<int>(i));
      }
    }
    below_ = std::move(below);
    ok_ = true;
  }
  bool ok() const { return ok_; }
  size_t states() const { return weight_.size(); }

  // Largest T for which k stages of at most T cannot cover the graph,
  // within `rel` of the optimum: optimum in (result, result * (1 + rel)].
  double lower_bound(int k, double rel = 1e-7) const {
    double lo = 0, hi = weight_.back();
    while (hi - lo > rel * hi) {
      double mid = (lo + hi) / 2;
      (feasible(k, mid) ? hi : lo) = mid;
    }
    return lo;
  }

  // Whether at most k stages of at most t each cover the graph.
  bool feasible(int k, double t) const {
    const size_t m = weight_.size();
    // best[D]: the heaviest sub-down-set of D that s - 1 stages cover (0: none).
    std::vector<double> best(m, 0.0), next(m);
    const double none = -std::numeric_limits<double>::infinity();
    for (int s = 1; s <= k; ++s) {
      if (weight_.back() - best.back() <= t) return true;
      for (size_t d = 0; d < m; ++d) {
        double b = weight_[d] - best[d] <= t ? weight_[d] : none;
        for (int e : below_[d]) b = std::max(b, next[e]);
        next[d] = b;
      }
      best.swap(next);
    }
    return false;
  }

 private:
  bool ok_ = false;
  std::vector<double> weight_;
  std::vector<std::vector<int>> below_;
};

}  // namespace pw::test
