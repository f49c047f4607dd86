#include "core/plan/exact_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/plan/pipeline_model.h"
#include "core/plan/vpipe_planner.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxPolicies = 4e6;

struct FrontEntry {
  double recompute_ms;
  std::uint64_t swap_bytes;
  std::vector<MemoryPolicy> policy;  // for the range's layers
};

class ExactSearch {
 public:
  explicit ExactSearch(const PlanRequest& req) : model_(req), L_(model_.layers()), p_(model_.stages()) {
    double work = 0;
    for (int a = 0; a < L_; ++a)
      for (int b = a; b < L_ && b - a + 1 <= L_ - p_ + 1; ++b) work += p_ * std::pow(3.0, b - a + 1);
    if (work > kMaxPolicies)
      throw SpecError("pipeline.planner", "planner exact: " + std::to_string(L_) + " layers on " + std::to_string(p_) +
                                  " stages needs ~" + std::to_string(static_cast<long long>(std::min(work, 1e18))) +
                                  " policy evaluations (limit " + std::to_string(static_cast<long long>(kMaxPolicies)) +
                                  "); use vpipe or a smaller instance");
    fronts_.resize(static_cast<size_t>(p_) * L_ * L_);
    policy_.assign(L_, MemoryPolicy::Keep);
    const auto& sched = model_.schedule();
    async_ = !flushes(sched);
  }

  Plan run() {
    // Incumbent: vpipe's plan, when it lies in the plan space.
    Plan seed = VPipePlanner().plan(model_.request());
    bool in_space = true;
    for (size_t s = 0; s < seed.stages.size(); ++s)
      in_space = in_space && model_.evaluate(static_cast<int>(s), seed.stages[s].first_layer, seed.stages[s].last_layer,
                                             seed.policy).fits;
    if (in_space) {
      best_ = seed;
      best_ms_ = model_.simulate_ms(seed);
    }
    chosen_.clear();
    dfs(0, 0, 0, 0, 0, 0, 0);
    return best_ms_ < kInf ? best_ : seed;
  }

 private:
  const std::vector<FrontEntry>& front(int s, int a, int b) {
    auto& f = fronts_[(static_cast<size_t>(s) * L_ + a) * L_ + b];
    if (f.built) return f.entries;
    f.built = true;
    const int k = b - a + 1;
    std::vector<FrontEntry> all;
    std::vector<MemoryPolicy> pol(policy_);
    long long combos = 1;
    for (int i = 0; i < k; ++i) combos *= 3;
    for (long long c = 0; c < combos; ++c) {
      long long x = c;
      for (int i = 0; i < k; ++i, x /= 3) pol[a + i] = static_cast<MemoryPolicy>(x % 3);
      RangeChoice r = model_.evaluate(s, a, b, pol);
      if (!r.fits) continue;
      all.push_back({r.recompute_ms, r.swap_bytes, std::vector<MemoryPolicy>(pol.begin() + a, pol.begin() + b + 1)});
    }
    std::sort(all.begin(), all.end(), [](const FrontEntry& x, const FrontEntry& y) {
      return x.recompute_ms != y.recompute_ms ? x.recompute_ms < y.recompute_ms : x.swap_bytes < y.swap_bytes;
    });
    std::uint64_t least_swap = std::numeric_limits<std::uint64_t>::max();
    for (auto& e : all) {
      if (e.swap_bytes >= least_swap) continue;  // dominated (or equal) in both
      least_swap = e.swap_bytes;
      f.entries.push_back(std::move(e));
    }
    return f.entries;
  }

  // pre: forward path to this stage's first forward (sum of earlier
  // forwards and activation sends). chain: from the end of the previous
  // stage's last input gradient down to stage 0's (recompute + input
  // gradient of each earlier stage, with gradient sends; with a full
  // backward the input gradient is all of it). bound: the largest lower
  // bound of the stages placed so far.
  void dfs(int s, int a, double pre, double chain, double opt0, double w0, double bound) {
    const int m = model_.microbatches();
    const int max_b = s == p_ - 1 ? L_ - 1 : L_ - p_ + s;
    const int min_b = s == p_ - 1 ? L_ - 1 : a;
    const bool split = model_.splits_backward();
    // A V's second chunk shares its device with virtual stage 2p-1-s.
    const int twin = s >= model_.request().stages ? p_ - 1 - s : -1;
    for (int b = min_b; b <= max_b; ++b) {
      const double slow = model_.slowdown(s);
      const double F = model_.fwd_ms(a, b) * slow, B = model_.bwd_ms(a, b) * slow, O = model_.optimizer_ms(a, b) * slow;
      const double Wt = split ? model_.bwd_weight_ms(a, b) * slow : 0;
      const double sb = model_.hop_in_ms(s, a);
      for (const auto& e : front(s, a, b)) {
        const double R = e.recompute_ms;  // already x slowdown
        double lb = bound;
        // Every stage's device runs m forwards and backwards after its first
        // forward starts; after its last input gradient that microbatch's
        // gradient still passes every earlier stage, then stage 0 finishes
        // that microbatch's W and steps.
        if (async_) {
          // Steady state between two step ends of stage 0: m backwards and
          // steps, and the forwards not issued during warm-up.
          if (s == 0) {
            int w = std::min(p_ - 1, 2 * m);
            lb = m * (B + R + O) + std::max(0, m - w) * F;
          }
        } else {
          double o0 = s == 0 ? O : opt0, W0 = s == 0 ? Wt : w0;
          lb = std::max(lb, pre + m * (F + B + R) + O);
          lb = std::max(lb, pre + m * (F + R + B - Wt) + (s == 0 ? 0 : chain + sb) + W0 + o0);
          if (twin >= 0) {
            // The device's first forward waits for the twin's input; then it
            // runs both chunks' work and steps once for both.
            const Chosen& t = chosen_[twin];
            lb = std::max(lb, t.pre + m * (F + B + R + t.work) + O + t.opt);
          }
        }
        if (lb >= best_ms_ * (1 - 1e-12)) continue;
        chosen_.push_back({a, b, &e, pre, F + B + R, O});
        if (s == p_ - 1) {
          leaf();
        } else {
          double next_chain = s == 0 ? R + B - Wt : chain + sb + R + B - Wt;
          dfs(s + 1, b + 1, pre + F + model_.hop_out_ms(s, b), next_chain, s == 0 ? O : opt0, s == 0 ? Wt : w0, lb);
        }
        chosen_.pop_back();
      }
    }
  }

  void leaf() {
    Plan p;
    p.policy.assign(L_, MemoryPolicy::Keep);
    for (const auto& c : chosen_) {
      p.stages.push_back({c.a, c.b});
      std::copy(c.e->policy.begin(), c.e->policy.end(), p.policy.begin() + c.a);
    }
    double t = model_.simulate_ms(p);
    if (t < best_ms_ * (1 - 1e-12)) {
      best_ms_ = t;
      best_ = std::move(p);
    }
  }

  struct Front {
    bool built = false;
    std::vector<FrontEntry> entries;
  };
  struct Chosen {
    int a, b;
    const FrontEntry* e;
    double pre, work, opt;  // forward path to it, its work per microbatch, its step
  };
  PipelineModel model_;
  int L_, p_;
  bool async_ = false;
  std::vector<Front> fronts_;
  std::vector<MemoryPolicy> policy_;
  std::vector<Chosen> chosen_;
  Plan best_;
  double best_ms_ = kInf;
};

}  // namespace

Plan ExactPlanner::plan(const PlanRequest& req) const {
  // One chunk per device, or a V (two, placed by the schedule): the bounds
  // below know no interleaved placement.
  if (req.chunks != 1 && !(is_v_shape(req.schedule) && req.chunks == 2))
    throw SpecError("pipeline.chunks", "planner exact supports pipeline.chunks = 1 (or 2 on a V-shaped schedule) only, got " +
                                           std::to_string(req.chunks));
  return ExactSearch(req).run();
}

}  // namespace pw
