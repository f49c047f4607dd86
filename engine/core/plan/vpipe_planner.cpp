#include "core/plan/vpipe_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/plan/order_choice.h"
#include "core/plan/pipedream_planner.h"

namespace pw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

thread_local VPipeWork work;

// Layouts one boundary layer away: stage s gives its last layer to s + 1
// or takes the first layer of s + 1.
std::vector<Layout> neighbours(const Layout& ends) {
  std::vector<Layout> out;
  for (size_t s = 0; s + 1 < ends.size(); ++s) {
    int prev = s == 0 ? -1 : ends[s - 1];
    for (int d : {-1, 1}) {
      int e = ends[s] + d;
      if (e <= prev || e >= ends[s + 1]) continue;
      Layout n = ends;
      n[s] = e;
      out.push_back(std::move(n));
    }
  }
  return out;
}

// Layouts where the boundaries of stages s..t (t - s < span) all move one
// layer the same way: a layer passes along a run of stages, which single
// moves reach only through a worse layout.
std::vector<Layout> shifts(const Layout& ends, int span) {
  std::vector<Layout> out;
  const int V = static_cast<int>(ends.size());
  for (int s = 0; s + 1 < V; ++s) {
    for (int t = s; t + 1 < V && t - s < span; ++t) {
      for (int d : {-1, 1}) {
        int lo = ends[s] + d, hi = ends[t] + d;
        if (lo <= (s == 0 ? -1 : ends[s - 1]) || hi >= ends[t + 1]) continue;
        Layout n = ends;
        for (int j = s; j <= t; ++j) n[j] += d;
        out.push_back(std::move(n));
      }
    }
  }
  return out;
}

// Bytes over budget summed over stages: how far a layout is from fitting.
double overflow(PartitionSearch& search, const Layout& ends) {
  double over = 0;
  auto c = search.choices(ends);
  for (size_t s = 0; s < c.size(); ++s) {
    double b = static_cast<double>(search.model().budget(static_cast<int>(s)));
    if (!c[s].fits) over += std::max(1.0, static_cast<double>(c[s].peak_bytes) - b);
  }
  return over;
}

// Moves pass a layer along at most this many boundaries: every run on
// short pipelines, 4 on long ones (the moves grow as stages x span).
int move_span(const PipelineModel& m) { return m.stages() <= 16 ? m.stages() : 4; }

// Two-move neighbourhoods cost |moves|^2 estimates, and the final
// passes many simulations; on models this small that is still about a
// millisecond, and they close the last gaps to exact (docs/planners.md).
constexpr int kSmallModelLayers = 32;
bool small_model(const PipelineModel& m) { return m.layers() <= kSmallModelLayers; }
bool pair_moves(const PipelineModel& m) { return small_model(m) && m.stages() <= 16; }

// PipeDream's partition as a seed. Every family `auto` plans on a
// placement seeds with the same one (one chunk: three families, a V: four),
// and its DP is O(stages x layers^2): the last few are kept, keyed by all
// the DP reads (each layer's forward + backward and cut bytes, the stages,
// the link), so a repeat is exactly the partition the DP would give.
Layout pipedream_seed(const ModelProfile& profile, int stages, double link_gbps) {
  struct Kept {
    int stages;
    double link_gbps;
    std::vector<double> work;
    std::vector<std::uint64_t> cut_bytes;
    Layout seed;
  };
  thread_local std::vector<Kept> kept;
  std::vector<double> w;
  std::vector<std::uint64_t> cut;
  for (int l = 0; l < profile.size(); ++l) {
    w.push_back(profile.layers[l].fwd_ms + profile.layers[l].bwd_ms);
    cut.push_back(profile.boundary_bytes(l));
  }
  for (const Kept& k : kept)
    if (k.stages == stages && k.link_gbps == link_gbps && k.work == w && k.cut_bytes == cut) return k.seed;
  ++work.pipedream_seeds;
  Layout seed = to_layout(pipedream_partition(profile, stages, link_gbps));
  if (kept.size() >= 4) kept.erase(kept.begin());
  kept.push_back({stages, link_gbps, std::move(w), std::move(cut), seed});
  return seed;
}

// Every estimate is counted (vpipe_work).
double estimate(PartitionSearch& search, const Layout& l) {
  ++work.estimates;
  work.stage_estimates += static_cast<std::int64_t>(l.size());
  return search.estimate_ms(l);
}
// A layout near `base`, whose choices are `base_choices`: the same figure
// as estimate(), with only the changed stages looked up.
double estimate_near(PartitionSearch& search, const Layout& l, const Layout& base,
                     const std::vector<RangeChoice>& base_choices) {
  ++work.estimates;
  work.stage_estimates += static_cast<std::int64_t>(l.size());
  return search.estimate_near(l, base, base_choices);
}

class Search {
 public:
  explicit Search(const PlanRequest& req)
      : model_(req), search_(model_), finalists_(order_finalists(req)), climb_left_(climb_budget(req)) {
    ++work.searches;
    const std::int64_t actions = 2LL * model_.stages() * model_.microbatches() + 1;
    // Simulations get ~100k schedule actions of planning time.
    const auto most = std::max<std::int64_t>(4, static_cast<std::int64_t>(200 * req.search_effort));
    sims_left_ = static_cast<int>(
        std::clamp<std::int64_t>(static_cast<std::int64_t>(100000 * req.search_effort) / actions, 4, most));
  }

  Plan global() {
    std::vector<Layout> cands;
    double T = search_.min_bottleneck_ms();
    if (T < 1e299)
      for (double f : {1.0, 1.02, 1.1}) {
        Layout l = search_.min_fill_layout(T * f);
        if (!l.empty()) cands.push_back(l);
      }
    const int L = model_.layers(), V = model_.stages();
    cands.push_back(to_layout(uniform_partition(L, V).stages));
    // PipeDream's DP is O(stages x layers^2): a seed for small models only.
    if (static_cast<double>(V) * L * L <= 4e6)
      cands.push_back(pipedream_seed(*model_.request().profile, V,
                                     model_.request().stages > 1 ? model_.request().device.link_gbps : 0));
    std::set<Layout> seen;
    std::vector<std::pair<double, Layout>> scored;
    for (auto& c : cands)
      if (seen.insert(c).second) scored.push_back({estimate(search_, c), c});
    std::sort(scored.begin(), scored.end());
    if (scored.front().first >= 1e299) return least_overflow(scored);
    // Climb each candidate on the estimate (cheap), then simulate the three
    // best results and climb on simulated time from the best. The climbs
    // share the search's budget; one that stops short leaves the rest to
    // those after it.
    size_t climbing = 0;
    while (climbing < scored.size() && climbing < 3 && scored[climbing].first < 1e299) ++climbing;
    for (size_t i = 0; i < climbing; ++i) {
      double spent = 0;
      scored[i].first = climb_on_estimate(search_, scored[i].second, scored[i].first,
                                          climb_left_ / static_cast<double>(climbing - i), &spent);
      climb_left_ -= spent;
    }
    std::sort(scored.begin(), scored.end());
    scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
    Layout best;
    double best_ms = kInf;
    for (size_t i = 0; i < scored.size() && i < 3 && scored[i].first < 1e299; ++i) {
      double t = simulate(scored[i].second);
      if (t < best_ms) {
        best_ms = t;
        best = scored[i].second;
      }
    }
    climb(best, best_ms);
    Plan plan = plan_from_layout(search_, best);
    refine_policies(plan, best_ms);
    // On larger models the climb has already judged these moves with the
    // solver's policies and few stages are short enough for a front: the
    // pass would spend the simulation budget for little (auto's < 50 ms).
    if (small_model(model_)) refine_layout(plan, best_ms);
    // "generated": the plan's own order may rank the runners-up above it.
    if (order_finalists(model_.request()) > 0)
      return choose_by_generated_order(model_.request(), plan, finalists_.plans());
    return plan;
  }

  Plan incremental(const Plan& current) {
    Layout ends = to_layout(current.stages);
    double est = estimate(search_, ends);
    for (int round = 0; round < 4 * model_.layers(); ++round) {
      Layout next;
      double next_est = kInf, next_over = kInf;
      double over = est < 1e299 ? 0 : overflow(search_, ends);
      for (auto& n : neighbours(ends)) {
        double e = estimate(search_, n);
        if (est < 1e299) {
          if (e < next_est) {
            next_est = e;
            next = n;
          }
        } else {
          // Not fitting yet: move towards fitting first.
          double o = e < 1e299 ? 0 : overflow(search_, n);
          if (o < next_over || (o == next_over && e < next_est)) {
            next_over = o;
            next_est = e;
            next = n;
          }
        }
      }
      if (next.empty()) break;
      bool better = est < 1e299 ? next_est < est * (1 - 1e-2) : next_over < over;
      if (!better) break;
      ends = next;
      est = next_est;
    }
    if (est >= 1e299) return global();
    return plan_from_layout(search_, ends);
  }

 private:
  double simulate(const Layout& ends) { return simulate(plan_from_layout(search_, ends)); }
  double simulate(const Plan& plan) {
    --sims_left_;
    ++work.simulations;
    const double t = model_.simulate_ms(plan);
    finalists_.offer(plan, t);
    return t;
  }

  // Hill climbing on simulated time over moves of one layer along a run
  // of boundaries; each round simulates the moves with the best estimates.
  void climb(Layout& best, double& best_ms) {
    const int span = move_span(model_);
    while (sims_left_ > 0) {
      std::vector<std::pair<double, Layout>> moves;
      const std::vector<RangeChoice> cur = search_.choices(best);
      for (auto& n : shifts(best, span)) {
        double e = estimate_near(search_, n, best, cur);
        if (e < 1e299) moves.push_back({e, std::move(n)});
      }
      std::sort(moves.begin(), moves.end());
      if (moves.size() > 16) moves.resize(16);
      Layout step;
      double step_ms = best_ms * (1 - 1e-9);
      for (auto& [e, n] : moves) {
        if (sims_left_ <= 0) break;
        double t = simulate(n);
        if (t < step_ms) {
          step_ms = t;
          step = n;
        }
      }
      if (step.empty()) break;
      best = step;
      best_ms = step_ms;
    }
  }

  // Coordinate descent on simulated time over each short stage's other
  // Pareto-optimal policies: the solver's cost cannot see where the
  // schedule leaves slack that hides a swap (or makes a recompute free).
  // Stages lo..hi only (all by default).
  void refine_policies(Plan& plan, double& ms, int lo = 0, int hi = -1) {
    const int V = model_.stages();
    if (hi < 0) hi = V - 1;
    std::vector<std::vector<FrontPolicy>> fronts(V);
    for (int s = lo; s <= hi; ++s) fronts[s] = model_.policy_front(s, plan.stages[s].first_layer, plan.stages[s].last_layer);
    // Larger models: one pass over each front's three cheapest policies.
    const size_t tries = small_model(model_) ? 12 : 3;
    for (int pass = 0; pass < (small_model(model_) ? 4 : 1); ++pass) {
      bool improved = false;
      for (int s = lo; s <= hi; ++s) {
        const int a = plan.stages[s].first_layer;
        for (size_t k = 0; k < fronts[s].size() && k < tries && sims_left_ > 0; ++k) {
          const auto& pol = fronts[s][k].policy;
          if (std::equal(pol.begin(), pol.end(), plan.policy.begin() + a)) continue;
          Plan q = plan;
          std::copy(pol.begin(), pol.end(), q.policy.begin() + a);
          double t = simulate(q);
          if (t < ms * (1 - 1e-9)) {
            plan = std::move(q);
            ms = t;
            improved = true;
          }
        }
      }
      if (!improved) break;
    }
  }

  // Final pass: moves of one layer along a run of boundaries (as climb),
  // each with its changed stages' policies re-chosen by refine_policies,
  // first improvement taken; the climb judged moves by the solver's
  // policies only.
  void refine_layout(Plan& plan, double& ms) {
    const int span = move_span(model_);
    while (sims_left_ > 0) {
      const Layout cur = to_layout(plan.stages);
      const std::vector<RangeChoice> cur_choices = search_.choices(cur);
      std::vector<std::pair<double, Layout>> moves;
      for (auto& n : shifts(cur, span)) {
        double e = estimate_near(search_, n, cur, cur_choices);
        if (e < 1e299) moves.push_back({e, std::move(n)});
      }
      std::sort(moves.begin(), moves.end());
      bool improved = false;
      for (auto& [e, n] : moves) {
        if (sims_left_ <= 0) break;
        int lo = 0, hi = static_cast<int>(n.size()) - 1;
        while (n[lo] == cur[lo]) ++lo;
        while (n[hi] == cur[hi]) --hi;
        ++hi;  // the stage after the last moved boundary changed too
        Plan q = plan_from_layout(search_, n);
        double t = simulate(q);
        refine_policies(q, t, lo, hi);
        if (t < ms * (1 - 1e-9)) {
          plan = std::move(q);
          ms = t;
          improved = true;
          break;
        }
      }
      // Stuck: the pairs of moves with the best estimates, simulated.
      if (!improved && pair_moves(model_)) {
        std::set<Layout> seen{cur};
        std::vector<std::pair<double, Layout>> pairs;
        for (auto& [e, n] : moves)
          for (auto& n2 : shifts(n, span)) {
            if (!seen.insert(n2).second) continue;
            double e2 = estimate_near(search_, n2, cur, cur_choices);
            if (e2 < 1e299) pairs.push_back({e2, std::move(n2)});
          }
        std::sort(pairs.begin(), pairs.end());
        if (pairs.size() > 24) pairs.resize(24);
        for (auto& [e, n] : pairs) {
          if (sims_left_ <= 0) break;
          Plan q = plan_from_layout(search_, n);
          double t = simulate(q);
          refine_policies(q, t);
          if (t < ms * (1 - 1e-9)) {
            plan = std::move(q);
            ms = t;
            improved = true;
            break;
          }
        }
      }
      if (!improved) break;
    }
  }

  // Nothing fits the bound: return the candidate closest to fitting.
  Plan least_overflow(const std::vector<std::pair<double, Layout>>& scored) {
    const Layout* best = &scored.front().second;
    double o = kInf;
    for (const auto& [e, l] : scored) {
      double x = overflow(search_, l);
      if (x < o) {
        o = x;
        best = &l;
      }
    }
    // The simulator judges it and names the stage that runs out of memory.
    return plan_from_layout(search_, *best);
  }

  PipelineModel model_;
  PartitionSearch search_;
  PlanFinalists finalists_;
  int sims_left_ = 0;
  double climb_left_ = 0;  // stage estimates (climb_budget)
};

}  // namespace

double climb_on_estimate(PartitionSearch& search, Layout& l, double est, double budget, double* spent) {
  const PipelineModel& model = search.model();
  const int span = move_span(model);
  const double V = model.stages();
  double used = 0;
  std::vector<RangeChoice> cur = search.choices(l);
  auto spend = [&](std::size_t estimates) {
    const double cost = static_cast<double>(estimates) * V;
    if (used + cost > budget) return false;
    used += cost;
    return true;
  };
  for (int round = 0; round < 4 * model.layers(); ++round) {
    std::vector<Layout> moves = shifts(l, span);
    if (!spend(moves.size())) break;
    Layout step;
    double step_est = est * (1 - 1e-9);
    for (auto& n : moves) {
      double e = estimate_near(search, n, l, cur);
      if (e < step_est) {
        step_est = e;
        step = std::move(n);
      }
    }
    // Stuck: try two moves at once (a layer passed along one run, then
    // another), which single moves reach only through a worse layout.
    // |moves|^2 estimates: small models only (kSmallModelLayers); where the
    // budget ends inside, the best pair seen so far is taken.
    if (step.empty() && pair_moves(model)) {
      for (auto& n : shifts(l, span)) {
        std::vector<Layout> second = shifts(n, span);
        if (!spend(second.size())) break;
        for (auto& n2 : second) {
          double e = estimate_near(search, n2, l, cur);
          if (e < step_est) {
            step_est = e;
            step = std::move(n2);
          }
        }
      }
    }
    if (step.empty()) break;
    l = std::move(step);
    est = step_est;
    cur = search.choices(l);
  }
  work.climb_stage_estimates += static_cast<std::int64_t>(used);
  if (spent) *spent = used;
  return est;
}

const VPipeWork& vpipe_work() { return work; }

double climb_budget(const PlanRequest& req) {
  return std::max(kClimbFloor, kClimbStageEstimates * req.search_effort);
}

Plan plan_from_layout(PartitionSearch& search, const Layout& ends) {
  Plan p;
  p.stages = to_ranges(ends);
  p.policy.assign(search.model().layers(), MemoryPolicy::Keep);
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const auto& pol = search.policy(static_cast<int>(s), p.stages[s].first_layer, p.stages[s].last_layer);
    std::copy(pol.begin(), pol.end(), p.policy.begin() + p.stages[s].first_layer);
  }
  return p;
}

Plan VPipePlanner::plan(const PlanRequest& req) const {
  Search s(req);
  const Plan* cur = req.current;
  if (cur && cur->layer_count() == req.profile->size() &&
      static_cast<int>(cur->stages.size()) == req.stages * req.chunks) {
    validate_plan(*cur, req.profile->size());
    return s.incremental(*cur);
  }
  return s.global();
}

}  // namespace pw
