#include "core/plan/policy_solver.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace pw {
namespace {

class State {
 public:
  State(const PolicyProblem& p, const std::vector<PolicyItem>& items)
      : p_(p), items_(items), pol_(items.size(), MemoryPolicy::Keep) {
    for (const auto& it : items_) kept_ += it.act;
  }

  MemoryPolicy at(size_t i) const { return pol_[i]; }
  const std::vector<MemoryPolicy>& policy() const { return pol_; }

  void set(size_t i, MemoryPolicy to) {
    const PolicyItem& it = items_[i];
    MemoryPolicy from = pol_[i];
    if (from == to) return;
    if (from == MemoryPolicy::Keep) kept_ -= it.act;
    if (from == MemoryPolicy::Swap) {
      swap_ -= it.act;
      stash_ -= it.stash;
    }
    if (from == MemoryPolicy::Recompute) {
      kept_ -= it.in;
      rec_ -= it.fwd_ms;
    }
    pol_[i] = to;
    if (to == MemoryPolicy::Keep) kept_ += it.act;
    if (to == MemoryPolicy::Swap) {
      swap_ += it.act;
      stash_ += it.stash;
    }
    if (to == MemoryPolicy::Recompute) {
      kept_ += it.in;
      rec_ += it.fwd_ms;
      peak_act_ = std::max(peak_act_, it.act);
    }
    if (from == MemoryPolicy::Recompute && it.act >= peak_act_) {
      peak_act_ = 0;
      for (size_t j = 0; j < pol_.size(); ++j)
        if (pol_[j] == MemoryPolicy::Recompute) peak_act_ = std::max(peak_act_, items_[j].act);
    }
  }

  std::uint64_t bound() const {
    cost_.kept_bytes_per_mb = kept_;
    cost_.swap_bytes_per_mb = swap_;
    cost_.w_stash_swap_bytes_per_mb = stash_;
    cost_.recompute_peak_bytes = peak_act_;
    return held_memory_bound(cost_, p_.in_flight, p_.weight_versions, p_.kept_floor, p_.w_lag);
  }
  bool swap_ok() const { return swap_ <= p_.swap_cap && stash_ <= p_.swap_cap; }
  bool fits() const {
    if (!swap_ok() || bound() > p_.budget) return false;
    return p_.within_cap(cost_);  // as bound() has just filled it
  }
  // Recompute and exposed swap time; a hidden swap still costs a little,
  // so that among equal plans the one moving fewer bytes wins.
  double cost() const { return rec_ + p_.swap_cost_ms(swap_, stash_) + static_cast<double>(swap_ + stash_) * 1e-15; }

  // What layer i would cost under policy p.
  double cost_of(size_t i, MemoryPolicy p) const {
    if (p == MemoryPolicy::Recompute) return items_[i].fwd_ms;
    // Linear part only: a filter for trades, which cost() then judges.
    if (p == MemoryPolicy::Swap)
      return static_cast<double>(items_[i].act) *
                 (p_.swap_ms_per_byte * (2 * p_.exposure.twice + p_.exposure.full) + 1e-15) +
             static_cast<double>(items_[i].stash) * (p_.swap_ms_per_byte * p_.exposure.stash_full + 1e-15);
    return 0;
  }

  // Tries a change; keeps it if the result fits and costs less.
  bool try_set(size_t i, MemoryPolicy to) {
    MemoryPolicy from = pol_[i];
    double before = cost();
    set(i, to);
    if (fits() && cost() < before - 1e-15) return true;
    set(i, from);
    return false;
  }

  PolicySolution solution() const {
    PolicySolution s;
    s.fits = fits();
    s.cost_ms = p_.swap_cost_ms(swap_, stash_) + rec_;
    s.recompute_ms = rec_;
    s.kept = kept_;
    s.swap = swap_;
    s.swap_stash = stash_;
    s.recompute_peak = peak_act_;
    s.peak = bound();
    return s;
  }

 private:
  const PolicyProblem& p_;
  const std::vector<PolicyItem>& items_;
  std::vector<MemoryPolicy> pol_;
  std::uint64_t kept_ = 0, swap_ = 0, peak_act_ = 0;
  std::uint64_t stash_ = 0;  // the swapped layers' W stash
  double rec_ = 0;
  mutable StageCost cost_ = p_.base;
};

// Local improvement until no move helps: drop or convert recomputes,
// drop swaps, and exchange a recompute for a cheaper one.
void improve(State& s, const std::vector<size_t>& by_cost_desc, const std::vector<size_t>& by_act_desc,
             const std::vector<size_t>& by_eff_desc,
             const std::vector<PolicyItem>& items, bool can_swap) {
  thread_local std::vector<std::pair<size_t, MemoryPolicy>> undo;
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (size_t i : by_cost_desc) {
      if (s.at(i) == MemoryPolicy::Recompute) {
        if (s.try_set(i, MemoryPolicy::Keep) || (can_swap && s.try_set(i, MemoryPolicy::Swap))) changed = true;
      } else if (s.at(i) == MemoryPolicy::Swap) {
        if (s.try_set(i, MemoryPolicy::Keep)) changed = true;
      }
    }
    // Exchanges: two layers trade policies (a recompute moves to a cheaper
    // layer, a swap to a smaller one).
    for (size_t x = 0; x < by_cost_desc.size(); ++x) {
      for (size_t y = x + 1; y < by_cost_desc.size(); ++y) {
        size_t i = by_cost_desc[x], j = by_cost_desc[y];
        MemoryPolicy pi = s.at(i), pj = s.at(j);
        if (pi == pj) continue;
        // Only trades that cost less are worth a bound evaluation.
        if (s.cost_of(i, pj) + s.cost_of(j, pi) >= s.cost_of(i, pi) + s.cost_of(j, pj) - 1e-15) continue;
        double before = s.cost();
        s.set(i, pj);
        s.set(j, pi);
        if (s.fits() && s.cost() < before - 1e-15) {
          changed = true;
          continue;
        }
        s.set(i, pi);
        s.set(j, pj);
      }
    }
    // Undo a recompute and make room again with cheaper means: swapping
    // kept layers (largest first, where that lowers the bound; swapped
    // bytes stop adding to the peak once a recompute peak dominates the
    // swap buffers) and recomputing cheaper layers (most efficient first),
    // in either order. One dear recompute for several cheap changes.
    for (size_t i : by_cost_desc) {
      if (s.at(i) != MemoryPolicy::Recompute) continue;
      const double before = s.cost();
      bool done = false;
      // Changes are logged so that a failed attempt is undone in place.
      auto change = [&](size_t j, MemoryPolicy to) {
        undo.push_back({j, s.at(j)});
        s.set(j, to);
      };
      for (int order = 0; order < (can_swap ? 2 : 1) && !done; ++order) {
        undo.clear();
        change(i, MemoryPolicy::Keep);
        for (int pass = 0; pass < 2; ++pass) {
          bool swapping = can_swap && (pass == order);
          if (swapping) {
            for (size_t j : by_act_desc) {
              if (s.fits()) break;
              if (s.at(j) != MemoryPolicy::Keep) continue;
              std::uint64_t b = s.bound();
              change(j, MemoryPolicy::Swap);
              if (!s.swap_ok() || s.bound() >= b) s.set(j, MemoryPolicy::Keep);
            }
          } else {
            for (size_t j : by_eff_desc) {
              if (s.fits()) break;
              if (j != i && s.at(j) == MemoryPolicy::Keep && items[j].fwd_ms < items[i].fwd_ms &&
                  items[j].act > items[j].in)
                change(j, MemoryPolicy::Recompute);
            }
          }
        }
        done = s.fits() && s.cost() < before - 1e-15;
        if (!done)
          for (auto it = undo.rbegin(); it != undo.rend(); ++it) s.set(it->first, it->second);
      }
      changed = changed || done;
    }
    if (!changed) break;
  }
}

// Every policy of a short range (3^k): the greedy starts and local moves
// miss combinations on a few layers (measured against exact), and k <= 6
// costs at most 729 bound evaluations.
constexpr size_t kExhaustiveLayers = 6;

// Calls visit(policy, kept, swap, swapped stash, recompute peak, recompute
// ms, bound) for every policy of the items that fits.
// prune(recompute ms, swap bytes) skips a partial policy (and everything
// it extends to): both only grow as layers are added.
template <class Visit, class Prune>
void for_each_fitting(const PolicyProblem& prob, const std::vector<PolicyItem>& items, Visit&& visit, Prune&& prune) {
  const size_t k = items.size();
  std::vector<MemoryPolicy> pol(k, MemoryPolicy::Keep);
  StageCost c = prob.base;
  auto rec = [&](auto&& self, size_t i, std::uint64_t kept, std::uint64_t swap, std::uint64_t stash, std::uint64_t peak,
                 double r) -> void {
    if (prune(r, swap, stash)) return;
    if (i == k) {
      c.kept_bytes_per_mb = kept;
      c.swap_bytes_per_mb = swap;
      c.w_stash_swap_bytes_per_mb = stash;
      c.recompute_peak_bytes = peak;
      std::uint64_t bound = held_memory_bound(c, prob.in_flight, prob.weight_versions, prob.kept_floor, prob.w_lag);
      if (bound <= prob.budget && prob.within_cap(c)) visit(pol, kept, swap, stash, peak, r, bound);
      return;
    }
    const PolicyItem& it = items[i];
    pol[i] = MemoryPolicy::Keep;
    self(self, i + 1, kept + it.act, swap, stash, peak, r);
    if (it.act > it.in) {
      pol[i] = MemoryPolicy::Recompute;
      self(self, i + 1, kept + it.in, swap, stash, std::max(peak, it.act), r + it.fwd_ms);
    }
    if (prob.swap_cap > 0 && swap + it.act <= prob.swap_cap && stash + it.stash <= prob.swap_cap) {
      pol[i] = MemoryPolicy::Swap;
      self(self, i + 1, kept, swap + it.act, stash + it.stash, peak, r);
    }
    pol[i] = MemoryPolicy::Keep;
  };
  rec(rec, 0, 0, 0, 0, 0, 0.0);
}

// As State::cost: a hidden swap still costs a little.
double ranked_cost(const PolicyProblem& prob, double rec, std::uint64_t swap, std::uint64_t stash) {
  return rec + prob.swap_cost_ms(swap, stash) + static_cast<double>(swap + stash) * 1e-15;
}

bool solve_exhaustive(const PolicyProblem& prob, const std::vector<PolicyItem>& items, std::vector<MemoryPolicy>& out,
                      PolicySolution& best) {
  bool found = false;
  for_each_fitting(prob, items, [&](const std::vector<MemoryPolicy>& pol, std::uint64_t kept, std::uint64_t swap,
                                    std::uint64_t stash, std::uint64_t peak, double rec, std::uint64_t bound) {
    double cost = ranked_cost(prob, rec, swap, stash),
           best_cost = ranked_cost(prob, best.recompute_ms, best.swap, best.swap_stash);
    if (found && !(cost < best_cost - 1e-12 || (cost <= best_cost + 1e-12 && swap < best.swap))) return;
    found = true;
    best.fits = true;
    best.cost_ms = prob.swap_cost_ms(swap, stash) + rec;
    best.recompute_ms = rec;
    best.kept = kept;
    best.swap = swap;
    best.swap_stash = stash;
    best.recompute_peak = peak;
    best.peak = bound;
    out = pol;
  }, [&](double rec, std::uint64_t swap, std::uint64_t stash) {
    return found &&
           ranked_cost(prob, rec, swap, stash) > ranked_cost(prob, best.recompute_ms, best.swap, best.swap_stash) + 1e-12;
  });
  return found;
}

}  // namespace

PolicySolution solve_policy(const PolicyProblem& prob, const std::vector<PolicyItem>& items,
                            std::vector<MemoryPolicy>& out) {
  const size_t k = items.size();
  State keep(prob, items);
  if (keep.fits() || k == 0) {
    out.assign(k, MemoryPolicy::Keep);
    return keep.solution();
  }
  if (k <= kExhaustiveLayers) {
    PolicySolution x;
    if (solve_exhaustive(prob, items, out, x)) return x;
  }
  // Bytes a recompute saves per ms it costs.
  std::vector<double> eff(k);
  for (size_t i = 0; i < k; ++i) {
    double saved = static_cast<double>(prob.in_flight) * (static_cast<double>(items[i].act) - static_cast<double>(items[i].in));
    eff[i] = items[i].fwd_ms > 0 ? saved / items[i].fwd_ms : std::numeric_limits<double>::max();
  }
  std::vector<size_t> by_eff(k), by_cost(k), by_act(k);
  std::iota(by_eff.begin(), by_eff.end(), 0);
  std::iota(by_cost.begin(), by_cost.end(), 0);
  std::iota(by_act.begin(), by_act.end(), 0);
  std::sort(by_act.begin(), by_act.end(), [&](size_t x, size_t y) { return items[x].act > items[y].act; });
  std::sort(by_eff.begin(), by_eff.end(), [&](size_t x, size_t y) { return eff[x] > eff[y]; });
  std::sort(by_cost.begin(), by_cost.end(), [&](size_t x, size_t y) { return items[x].fwd_ms > items[y].fwd_ms; });
  const bool can_swap = prob.swap_cap > 0;

  PolicySolution best;
  std::vector<MemoryPolicy> best_pol;
  PolicySolution least;  // least memory, for when nothing fits
  std::vector<MemoryPolicy> least_pol;
  for (int start = 0; start < (can_swap ? 2 : 1); ++start) {
    State s(prob, items);
    if (start == 1) {
      // Swap what is dearest to recompute, while that lowers the bound.
      for (auto it = by_eff.rbegin(); it != by_eff.rend() && !s.fits(); ++it) {
        std::uint64_t before = s.bound();
        s.set(*it, MemoryPolicy::Swap);
        if (!s.swap_ok() || s.bound() >= before) s.set(*it, MemoryPolicy::Keep);
      }
    }
    for (size_t i : by_eff) {
      if (s.fits()) break;
      if (s.at(i) != MemoryPolicy::Recompute && items[i].act > items[i].in) s.set(i, MemoryPolicy::Recompute);
    }
    if (!s.fits() && can_swap) {
      for (auto it = by_eff.rbegin(); it != by_eff.rend() && !s.fits(); ++it) {
        if (s.at(*it) != MemoryPolicy::Keep) continue;
        std::uint64_t before = s.bound();
        s.set(*it, MemoryPolicy::Swap);
        if (!s.swap_ok() || s.bound() >= before) s.set(*it, MemoryPolicy::Keep);
      }
    }
    if (!s.fits()) {
      PolicySolution x = s.solution();
      if (least_pol.empty() || x.peak < least.peak) {
        least = x;
        least_pol = s.policy();
      }
      continue;
    }
    improve(s, by_cost, by_act, by_eff, items, can_swap);
    PolicySolution x = s.solution();
    if (best_pol.empty() || x.cost_ms < best.cost_ms - 1e-12 ||
        (x.cost_ms <= best.cost_ms + 1e-12 && x.swap < best.swap)) {
      best = x;
      best_pol = s.policy();
    }
  }
  if (best_pol.empty()) {
    // Recomputing everything raises the recompute peak to the largest
    // activation, which can cost more than it saves. Cap that peak: for
    // each cap (ascending), recompute exactly the layers under it, swap
    // others where that lowers the bound; the first that fits is improved.
    std::vector<std::uint64_t> caps;
    for (const auto& it : items) caps.push_back(it.act);
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
    for (std::uint64_t cap : caps) {
      State s(prob, items);
      for (size_t i = 0; i < k; ++i)
        if (items[i].act <= cap && items[i].act > items[i].in) s.set(i, MemoryPolicy::Recompute);
      for (size_t i : by_act) {
        if (s.fits() || !can_swap) break;
        if (s.at(i) != MemoryPolicy::Keep) continue;
        std::uint64_t before = s.bound();
        s.set(i, MemoryPolicy::Swap);
        if (!s.swap_ok() || s.bound() >= before) s.set(i, MemoryPolicy::Keep);
      }
      if (!s.fits()) {
        if (s.bound() < least.peak) {
          least = s.solution();
          least_pol = s.policy();
        }
        continue;
      }
      improve(s, by_cost, by_act, by_eff, items, can_swap);
      best = s.solution();
      best_pol = s.policy();
      break;
    }
  }
  if (best_pol.empty()) {
    out = least_pol;
    return least;
  }
  out = best_pol;
  return best;
}

}  // namespace pw

namespace pw {

std::vector<FrontPolicy> policy_front(const PolicyProblem& prob, const std::vector<PolicyItem>& items) {
  std::vector<FrontPolicy> all;
  if (items.size() > kExhaustiveLayers) return all;
  for_each_fitting(prob, items, [&](const std::vector<MemoryPolicy>& pol, std::uint64_t, std::uint64_t swap,
                                    std::uint64_t stash, std::uint64_t, double rec, std::uint64_t) {
    all.push_back({pol, rec, swap, ranked_cost(prob, rec, swap, stash)});
  }, [](double, std::uint64_t, std::uint64_t) { return false; });
  // Pareto front of (recompute ms, swap bytes): the simulator is monotone
  // in both, so a dominated policy is never faster.
  std::sort(all.begin(), all.end(), [](const FrontPolicy& x, const FrontPolicy& y) {
    return x.recompute_ms != y.recompute_ms ? x.recompute_ms < y.recompute_ms : x.swap_bytes < y.swap_bytes;
  });
  std::vector<FrontPolicy> front;
  std::uint64_t least_swap = std::numeric_limits<std::uint64_t>::max();
  for (auto& e : all) {
    if (e.swap_bytes >= least_swap) continue;
    least_swap = e.swap_bytes;
    front.push_back(std::move(e));
  }
  std::sort(front.begin(), front.end(), [](const FrontPolicy& x, const FrontPolicy& y) { return x.cost_ms < y.cost_ms; });
  return front;
}

}  // namespace pw
