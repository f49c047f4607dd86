#include "core/plan/partition_search.h"

#include <algorithm>

namespace pw {

std::vector<StageRange> to_ranges(const Layout& ends) {
  std::vector<StageRange> r;
  int first = 0;
  for (int e : ends) {
    r.push_back({first, e});
    first = e + 1;
  }
  return r;
}

Layout to_layout(const std::vector<StageRange>& ranges) {
  Layout l;
  for (const auto& r : ranges) l.push_back(r.last_layer);
  return l;
}

std::uint64_t PartitionSearch::key(int stage, int a, int b) const {
  const std::uint64_t L = static_cast<std::uint64_t>(m_.layers());
  return (static_cast<std::uint64_t>(stage) * L + static_cast<std::uint64_t>(a)) * L + static_cast<std::uint64_t>(b);
}

const RangeChoice& PartitionSearch::choice(int stage, int a, int b) {
  const std::uint64_t k = key(stage, a, b);
  auto it = cache_.find(k);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(k, m_.solve(stage, a, b)).first->second;
}

const std::vector<MemoryPolicy>& PartitionSearch::policy(int stage, int a, int b) {
  const std::uint64_t k = key(stage, a, b);
  auto it = policies_.find(k);
  if (it != policies_.end()) return it->second;
  std::vector<MemoryPolicy> pol(static_cast<size_t>(b - a + 1), MemoryPolicy::Keep);
  const RangeChoice c = m_.solve(stage, a, b, pol.data());
  cache_.emplace(k, c);  // the same solve: choice() need not repeat it
  return policies_.emplace(k, std::move(pol)).first->second;
}

std::vector<RangeChoice> PartitionSearch::choices(const Layout& ends) {
  std::vector<RangeChoice> c;
  int first = 0;
  for (size_t s = 0; s < ends.size(); ++s) {
    c.push_back(choice(static_cast<int>(s), first, ends[s]));
    first = ends[s] + 1;
  }
  return c;
}

double PartitionSearch::estimate_ms(const Layout& ends) {
  auto c = choices(ends);
  for (const auto& x : c)
    if (!x.fits) return kInf;
  return m_.estimate_ms(to_ranges(ends), c);
}

double PartitionSearch::estimate_near(const Layout& ends, const Layout& base, const std::vector<RangeChoice>& base_choices) {
  const size_t V = ends.size();
  near_choices_ = base_choices;
  near_ranges_.resize(V);
  int first = 0;
  for (size_t s = 0; s < V; ++s) {
    near_ranges_[s] = {first, ends[s]};
    // A stage whose range is the base's keeps the base's choice.
    const bool same = ends[s] == base[s] && (s == 0 || ends[s - 1] == base[s - 1]);
    if (!same) {
      near_choices_[s] = choice(static_cast<int>(s), first, ends[s]);
      if (!near_choices_[s].fits) return kInf;
    }
    first = ends[s] + 1;
  }
  for (const auto& x : near_choices_)
    if (!x.fits) return kInf;
  return m_.estimate_ms(near_ranges_, near_choices_);
}

double PartitionSearch::bottleneck_ms(const Layout& ends) {
  double t = 0;
  int first = 0;
  for (size_t s = 0; s < ends.size(); ++s) {
    t = std::max(t, period(static_cast<int>(s), first, ends[s]));
    first = ends[s] + 1;
  }
  return t;
}

Layout PartitionSearch::greedy_left(double T) {
  const int L = m_.layers(), p = m_.stages();
  Layout ends(p);
  int a = 0;
  for (int s = 0; s < p; ++s) {
    if (s == p - 1) {
      if (period(s, a, L - 1) > T) return {};
      ends[s] = L - 1;
      break;
    }
    const int max_b = L - p + s;  // one layer left for each later stage
    if (period(s, a, a) > T) return {};
    int b = a;
    // Compute alone over T ends the stage without consulting the solver.
    while (b + 1 <= max_b && (m_.fwd_ms(a, b + 1) + m_.bwd_ms(a, b + 1)) * m_.slowdown(s) <= T &&
           period(s, a, b + 1) <= T)
      ++b;
    ends[s] = b;
    a = b + 1;
  }
  return ends;
}

Layout PartitionSearch::greedy_right(double T) {
  const int L = m_.layers(), p = m_.stages();
  Layout ends(p);
  ends[p - 1] = L - 1;
  int b = L - 1;
  for (int s = p - 1; s >= 1; --s) {
    if (period(s, b, b) > T) return {};
    int a = b;
    while (a - 1 >= s && (m_.fwd_ms(a - 1, b) + m_.bwd_ms(a - 1, b)) * m_.slowdown(s) <= T &&
           period(s, a - 1, b) <= T)
      --a;  // one layer left for each earlier stage
    ends[s - 1] = a - 1;
    b = a - 1;
  }
  if (period(0, 0, b) > T) return {};
  return ends;
}

double PartitionSearch::min_bottleneck_ms() {
  Layout l = greedy_left(kInf / 2);
  if (l.empty()) return kInf;
  double hi = bottleneck_ms(l);
  // Lower bound: the compute of any one layer, and the average compute.
  double least_slow = m_.slowdown(0);
  for (int s = 0; s < m_.stages(); ++s) least_slow = std::min(least_slow, m_.slowdown(s));
  double lo = (m_.fwd_ms(0, m_.layers() - 1) + m_.bwd_ms(0, m_.layers() - 1)) * least_slow / m_.stages();
  for (int i = 0; i < m_.layers(); ++i) lo = std::max(lo, (m_.fwd_ms(i, i) + m_.bwd_ms(i, i)) * least_slow);
  lo = std::min(lo, hi);
  // 1e-4: the layouts are refined afterwards at and above this level.
  for (int iter = 0; iter < 100 && hi - lo > 1e-4 * hi; ++iter) {
    double mid = 0.5 * (lo + hi);
    Layout x = greedy_left(mid);
    if (x.empty())
      lo = mid;
    else
      hi = bottleneck_ms(x);
  }
  return hi;
}

Layout PartitionSearch::min_fill_layout(double T) {
  Layout left = greedy_left(T);
  if (left.empty()) return {};
  Layout right = greedy_right(T);
  if (right.empty()) return left;
  const int p = m_.stages();
  std::vector<int> lo(p), hi(p);
  for (int s = 0; s < p; ++s) {
    lo[s] = std::min(left[s], right[s]);
    hi[s] = std::max(left[s], right[s]);
  }
  // fill[s][b - lo[s]]: least fill of stages 0..s with stage s ending at b.
  std::vector<std::vector<double>> fill(p);
  std::vector<std::vector<int>> from(p);
  for (int s = 0; s < p; ++s) {
    fill[s].assign(hi[s] - lo[s] + 1, kInf);
    from[s].assign(hi[s] - lo[s] + 1, -1);
    for (int b = lo[s]; b <= hi[s]; ++b) {
      if (s == 0) {
        const RangeChoice& c = choice(0, 0, b);
        if (c.fits && c.period_ms <= T) fill[0][b - lo[0]] = c.compute_ms;
        continue;
      }
      for (int k = std::min(b - 1, hi[s - 1]); k >= lo[s - 1]; --k) {
        // Ranges only grow as k falls; stop once compute alone is over T.
        if ((m_.fwd_ms(k + 1, b) + m_.bwd_ms(k + 1, b)) * m_.slowdown(s) > T) break;
        double prev = fill[s - 1][k - lo[s - 1]];
        if (prev >= kInf) continue;
        const RangeChoice& c = choice(s, k + 1, b);
        if (!c.fits || c.period_ms > T) continue;
        double v = prev + c.compute_ms + m_.hop_out_ms(s - 1, k) + m_.hop_in_ms(s, k + 1);
        if (v < fill[s][b - lo[s]]) {
          fill[s][b - lo[s]] = v;
          from[s][b - lo[s]] = k;
        }
      }
    }
  }
  const int L = m_.layers();
  if (L - 1 < lo[p - 1] || L - 1 > hi[p - 1] || fill[p - 1][L - 1 - lo[p - 1]] >= kInf) return left;
  Layout ends(p);
  ends[p - 1] = L - 1;
  for (int s = p - 1; s >= 1; --s) ends[s - 1] = from[s][ends[s] - lo[s]];
  return ends;
}

}  // namespace pw
