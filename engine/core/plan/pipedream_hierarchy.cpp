#include "core/plan/pipedream_hierarchy.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace pw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Cell {
  double time = kInf;
  int split_state = -1, split_workers = -1, replicas = 0;
};

// One level's table over every range [i, j] of a chain of n states and
// m + 1 of its units.
class LevelTable {
 public:
  LevelTable(int n, int workers) : n_(n), w_(workers), cells_(static_cast<size_t>(n) * n * workers) {}
  Cell& at(int i, int j, int m) { return cells_[(static_cast<size_t>(i) * n_ + j) * w_ + m]; }
  int workers() const { return w_; }

 private:
  int n_, w_;
  std::vector<Cell> cells_;
};

double bytes_per_ms(double gbps) { return gbps * 1e9 / 8.0 / 1e3; }

}  // namespace

HierarchyPlan pipedream_hierarchy(const HybridStates& st, const std::vector<HybridLevel>& levels, bool transfers) {
  if (levels.empty()) throw std::invalid_argument("levels: none given");
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l].workers < 1)
      throw std::invalid_argument("levels[" + std::to_string(l) + "].workers: must be at least 1, got " +
                                  std::to_string(levels[l].workers));
    if (!(levels[l].bandwidth_gbps > 0))
      throw std::invalid_argument("levels[" + std::to_string(l) + "].bandwidth_gbps: must be positive, got " +
                                  std::to_string(levels[l].bandwidth_gbps));
  }
  const int n = st.size();
  if (n == 0) throw std::invalid_argument("states: none (a model without layers)");
  for (int j = 0; j < n; ++j) {
    bool chain = static_cast<int>(st.inside[j].size()) == j;
    for (int k = 0; chain && k < j; ++k) chain = st.inside[j][k] == k;
    if (!chain) throw std::invalid_argument("states: not a chain (state " + std::to_string(j) + "), as levels need");
  }
  auto raw = [](const std::vector<double>& cum, int i, int j) { return cum[j] - (i > 0 ? cum[i - 1] : 0.0); };

  std::vector<LevelTable> tables;
  for (size_t l = 0; l < levels.size(); ++l) {
    const int W = levels[l].workers;
    const double bw = bytes_per_ms(levels[l].bandwidth_gbps);
    const int within = l == 0 ? 1 : levels[l - 1].workers;
    const bool last = l + 1 == levels.size();
    LevelTable* below = l == 0 ? nullptr : &tables.back();
    // A range's compute on this level: its own on level 1, else its time on
    // one whole unit of the level below.
    auto cost = [&](int i, int j) {
      return below ? below->at(i, j, below->workers() - 1).time : raw(st.compute_ms, i, j);
    };
    LevelTable t(n, W);
    const int starts = last ? 1 : n;  // the outermost level needs ranges from the first state only
    for (int i = 0; i < starts; ++i)
      for (int j = i; j < n; ++j)
        for (int m = 0; m < W; ++m) {
          const double ar = 4.0 * m * raw(st.param_bytes, i, j) / (bw * (m + 1)) / within;
          t.at(i, j, m) = {(cost(i, j) + ar) / (m + 1), -1, -1, m + 1};
        }
    for (int i = 0; i < starts; ++i)
      for (int m = 1; m < W; ++m)
        for (int j = i + 1; j < n; ++j) {
          Cell best = t.at(i, j, m);
          for (int k = i; k < j; ++k) {
            const double c = cost(k + 1, j), p = raw(st.param_bytes, k + 1, j);
            for (int mp = 1; mp <= m; ++mp) {
              const Cell& before = t.at(i, k, m - mp);
              if (before.time == kInf) continue;
              double time = std::max(before.time, (c + 4.0 * (mp - 1) * p / (bw * mp)) / mp);
              if (transfers) {
                time = std::max(time, 2.0 * st.out_bytes[k] / (bw * mp));
                if (j < n - 1) time = std::max(time, 2.0 * st.out_bytes[j] / (bw * mp));
              }
              if (time < best.time) best = {time, k, m - mp, mp};
            }
          }
          t.at(i, j, m) = best;
        }
    tables.push_back(std::move(t));
  }

  // Each level's split of a range [a, b] over all its units, and each of its
  // stages split one level down.
  std::function<std::vector<HierarchyStage>(size_t, int, int)> split = [&](size_t l, int a, int b) {
    LevelTable& t = tables[l];
    const double bw = bytes_per_ms(levels[l].bandwidth_gbps);
    const int within = l == 0 ? 1 : levels[l - 1].workers;
    std::vector<HierarchyStage> out;
    const Cell* c = &t.at(a, b, t.workers() - 1);
    int to = b;
    while (true) {
      HierarchyStage s;
      const int from = c->split_state < 0 ? a : c->split_state + 1;
      s.from_state = from - 1;
      s.to_state = to;
      s.replicas = c->replicas;
      const double compute = l == 0 ? raw(st.compute_ms, from, to)
                                    : tables[l - 1].at(from, to, tables[l - 1].workers() - 1).time;
      const double r = s.replicas;
      double ar = 4.0 * (r - 1) * raw(st.param_bytes, from, to) / (bw * r);
      if (c->split_state < 0) ar /= within;  // the whole range as one stage: PipeDream's base case
      s.time_ms = (compute + ar) / r;
      if (l > 0) s.inner = split(l - 1, from, to);
      out.push_back(std::move(s));
      if (c->split_state < 0) break;
      to = c->split_state;
      c = &t.at(a, to, c->split_workers);
    }
    std::reverse(out.begin(), out.end());
    return out;
  };
  HierarchyPlan plan;
  plan.pipeline_ms = tables.back().at(0, n - 1, levels.back().workers - 1).time;
  plan.stages = split(levels.size() - 1, 0, n - 1);
  return plan;
}

}  // namespace pw
