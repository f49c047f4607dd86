// Belady (evict the candidate used farthest ahead) against LRU in the
// supernet layer cache, checked against a hand-worked reference string and
// a brute-force optimum.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/nas/eviction.h"
#include "core/nas/layer_cache.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

namespace {

using Requests = std::vector<std::vector<std::int64_t>>;  // keys each step needs at once

// Demand loads of unit-size candidates through a LayerCache of `capacity`
// candidates: each step's keys are made resident together, used (pinned),
// released.
std::uint64_t demand_loads(const Requests& req, int capacity, Eviction rule) {
  LayerCache cache(capacity, 1.0);
  NextUse next(req);
  cache.set_eviction(rule, &next);
  std::int64_t now = 0;
  for (int i = 0; i < static_cast<int>(req.size()); ++i) {
    std::vector<LayerCache::Item> items;
    for (auto k : req[i]) items.push_back({k, 1, 1});
    now = cache.ensure(items, now) + 1;
    cache.pin(items, now);
    next.consume(i);
    cache.unpin(items, true);
    EXPECT_LE(cache.used_bytes(), capacity) << "step " << i;
  }
  return cache.loads();
}

// The least number of loads any policy needs (exhaustive over which keys
// to keep): state = resident set, at most `capacity` keys.
std::uint64_t optimal_loads(const Requests& req, int capacity) {
  std::map<std::set<std::int64_t>, std::uint64_t> best = {{{}, 0}};
  for (const auto& r : req) {
    std::set<std::int64_t> need(r.begin(), r.end());
    std::map<std::set<std::int64_t>, std::uint64_t> nxt;
    for (const auto& [state, cost] : best) {
      std::uint64_t c = cost;
      for (auto k : need) c += state.count(k) ? 0 : 1;
      // Keep `need` and any subset of the rest that fits.
      std::vector<std::int64_t> rest;
      for (auto k : state)
        if (!need.count(k)) rest.push_back(k);
      int room = capacity - static_cast<int>(need.size());
      for (unsigned mask = 0; mask < (1u << rest.size()); ++mask) {
        if (__builtin_popcount(mask) > room) continue;
        std::set<std::int64_t> s = need;
        for (size_t i = 0; i < rest.size(); ++i)
          if (mask & (1u << i)) s.insert(rest[i]);
        auto it = nxt.find(s);
        if (it == nxt.end() || it->second > c) nxt[s] = c;
      }
    }
    best = std::move(nxt);
  }
  std::uint64_t m = UINT64_MAX;
  for (const auto& [s, c] : best) m = std::min(m, c);
  return m;
}

Requests random_requests(std::mt19937& rng, int steps, int keys, int per_step) {
  Requests out;
  for (int i = 0; i < steps; ++i) {
    std::vector<std::int64_t> r;
    // Like a subnet at a stage: one candidate from each of `per_step` layers.
    for (int l = 0; l < per_step; ++l) r.push_back(l * 100 + static_cast<int>(rng() % keys));
    out.push_back(r);
  }
  return out;
}

}  // namespace

TEST(NasEviction, HandWorkedReferenceString) {
  // 1 2 3 4 1 2 5 1 2 3 4 5 with room for 3. Optimal (worked by hand):
  // misses 1 2 3, 4 (evict 3: next used last), 5 (evict 4), 3 (evict 1 or
  // 2, neither used again), 4 (likewise) = 7. LRU misses all but the
  // 1 2 after 5 = 10.
  Requests req;
  for (int k : {1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5}) req.push_back({k});
  EXPECT_EQ(demand_loads(req, 3, Eviction::Belady), 7u);
  EXPECT_EQ(demand_loads(req, 3, Eviction::Lru), 10u);
  EXPECT_EQ(optimal_loads(req, 3), 7u);
}

TEST(NasEviction, BeladyIsOptimalAndNeverLoadsMoreThanLru) {
  std::mt19937 rng(20261204);
  int cases = 0, strictly_fewer = 0;
  for (int trial = 0; trial < 200; ++trial) {
    int per_step = 1 + trial % 2, keys = 3 + trial % 3;
    int capacity = per_step + static_cast<int>(rng() % (per_step * keys - per_step + 1));
    Requests req = random_requests(rng, 12, keys, per_step);
    auto belady = demand_loads(req, capacity, Eviction::Belady);
    auto lru = demand_loads(req, capacity, Eviction::Lru);
    EXPECT_LE(belady, lru) << "trial " << trial;
    EXPECT_EQ(belady, optimal_loads(req, capacity)) << "trial " << trial;
    ++cases;
    strictly_fewer += belady < lru;
  }
  EXPECT_GT(strictly_fewer, cases / 10);  // the property is not vacuous
}

TEST(NasEviction, BeladyNeverLoadsMoreThanLruOnLongSequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    int per_step = 1 + trial % 4, keys = 4 + trial % 13;
    int capacity = per_step + static_cast<int>(rng() % (per_step * keys));
    Requests req = random_requests(rng, 400, keys, per_step);
    EXPECT_LE(demand_loads(req, capacity, Eviction::Belady), demand_loads(req, capacity, Eviction::Lru))
        << "trial " << trial;
  }
}

TEST(NasEviction, NextUseSkipsStepsConsumedOutOfOrder) {
  NextUse next({{1, 2}, {2}, {1}, {3}, {1, 3}});
  EXPECT_EQ(next.next(1), 0);
  EXPECT_EQ(next.next(9), NextUse::kNever);
  next.consume(2);  // CSP ran step 2 before 0
  EXPECT_EQ(next.next(1), 0);
  next.consume(0);
  EXPECT_EQ(next.next(1), 4);
  EXPECT_EQ(next.next(2), 1);
  next.consume(1);
  EXPECT_EQ(next.next(2), NextUse::kNever);
  EXPECT_EQ(next.next(3), 3);
}

TEST(NasEviction, PrefetchDisplacesTheFarthestUnderBeladyTheOldestUnderLru) {
  // Room for 2. Resident: key 1 (loaded first, next used at step 1) and
  // key 2 (next used at step 5). Loading key 3 ahead displaces key 2 under
  // Belady, key 1 under LRU; a protected key is never displaced.
  NextUse next({{1, 2}, {1}, {9}, {3}, {9}, {2}});
  next.consume(0);
  for (Eviction rule : {Eviction::Belady, Eviction::Lru}) {
    LayerCache cache(2, 1.0);
    cache.set_eviction(rule, &next);
    cache.ensure({{1, 1, 1}}, 0);
    cache.ensure({{2, 1, 1}}, 0);
    EXPECT_EQ(cache.eviction(), rule);
    EXPECT_TRUE(cache.prefetch({{3, 1, 1}}, 10, {}));
    EXPECT_TRUE(cache.present(3));
    EXPECT_EQ(cache.present(1), rule == Eviction::Belady) << to_string(rule);
    EXPECT_EQ(cache.present(2), rule == Eviction::Lru) << to_string(rule);
    std::int64_t kept = rule == Eviction::Belady ? 1 : 2;
    EXPECT_FALSE(cache.prefetch({{4, 1, 1}}, 10, {kept, 3}));  // nothing left to displace
    EXPECT_FALSE(cache.present(4));
  }
  // Without next uses the rule falls back to LRU.
  LayerCache blind(2, 1.0);
  blind.set_eviction(Eviction::Belady, nullptr);
  EXPECT_EQ(blind.eviction(), Eviction::Lru);
}

TEST(NasEviction, TheSimulatorEvictsByBeladyWhereItKnowsTheSequence) {
  // 4 stages of 2 choice layers x 6 candidates of 10 MB (+10 MB gradient):
  // a stage's slice is 240 MB; a budget of 80 MB (a third) forces evictions.
  auto doc = csptest::uniform_supernet_json(4, 8, 6, 150);
  doc["search_space"]["param_mb"] = 10;
  doc["search_space"]["device_budget_gb"] = 80.0 / 1024;
  NasJob nj = prepare_nas_job(pw::parse_job(doc));
  auto in = supernet_sim_input(nj, SupernetMode::Csp);
  EXPECT_EQ(in.eviction, Eviction::Belady);  // the default
  csptest::Recorder rec;
  auto belady = simulate_supernet(in, &rec);
  EXPECT_EQ(belady.eviction, "belady");
  EXPECT_EQ(csptest::causal_violations(rec.events, nj.sequence, nj.stages), 0);
  in.eviction = Eviction::Lru;
  auto lru = simulate_supernet(in);
  EXPECT_EQ(lru.eviction, "lru");
  EXPECT_GT(lru.evictions, 0u);
  EXPECT_LT(belady.loads, lru.loads);
  // GPipe does not predict the schedule: on-demand loads, LRU.
  EXPECT_EQ(simulate_supernet(supernet_sim_input(nj, SupernetMode::GPipe)).eviction, "lru");
}
