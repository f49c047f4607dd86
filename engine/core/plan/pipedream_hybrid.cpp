#include "core/plan/pipedream_hybrid.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace pw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double bytes_per_ms(double gbps) { return gbps * 1e9 / 8.0 / 1e3; }

struct Cell {
  double time = kInf;
  int split_state = -1;    // the state the previous stages end at; -1: this is the first stage
  int split_workers = -1;  // their worker index (workers - 1)
  int replicas = 0;        // of the last stage
};

}  // namespace

HybridStates prefix_states(const ModelProfile& profile) {
  HybridStates s;
  const int n = profile.size();
  double c = 0, p = 0;
  for (int i = 0; i < n; ++i) {
    c += profile.layers[i].fwd_ms + profile.layers[i].bwd_ms;
    p += static_cast<double>(profile.layers[i].param_bytes);
    s.compute_ms.push_back(c);
    s.param_bytes.push_back(p);
    s.out_bytes.push_back(static_cast<double>(profile.boundary_bytes(i)));
    std::vector<int> inside(i);
    for (int k = 0; k < i; ++k) inside[k] = k;
    s.inside.push_back(std::move(inside));
  }
  return s;
}

double hybrid_stage_ms(double compute_ms, double param_bytes, int replicas, double bandwidth_gbps) {
  const double r = replicas;
  const double allreduce = 4.0 * (r - 1.0) * param_bytes / (bytes_per_ms(bandwidth_gbps) * r);
  return (compute_ms + allreduce) / r;
}

HybridPlan pipedream_hybrid(const HybridStates& st, const HybridOptions& o) {
  if (o.workers < 1) throw std::invalid_argument("workers: must be at least 1, got " + std::to_string(o.workers));
  if (!(o.bandwidth_gbps > 0))
    throw std::invalid_argument("bandwidth_gbps: must be positive, got " + std::to_string(o.bandwidth_gbps));
  if (o.stages < 0) throw std::invalid_argument("stages: must be 0 (any) or positive, got " + std::to_string(o.stages));
  const int n = st.size();
  if (n == 0) throw std::invalid_argument("states: none (a model without layers)");
  const int W = o.workers;
  // One slot per stage count when it is fixed; PipeDream's own table has
  // none (slot 0 holds the best over every count).
  const bool fixed = o.stages > 0;
  const int S = fixed ? o.stages : 1;
  std::vector<Cell> A(static_cast<size_t>(n) * W * S);
  auto at = [&](int j, int m, int s) -> Cell& { return A[(static_cast<size_t>(j) * W + m) * S + s]; };
  const double bw = bytes_per_ms(o.bandwidth_gbps);

  // A state on m + 1 workers as one stage.
  for (int j = 0; j < n; ++j)
    for (int m = 0; m < W; ++m)
      at(j, m, 0) = {hybrid_stage_ms(st.compute_ms[j], st.param_bytes[j], m + 1, o.bandwidth_gbps), -1, -1, m + 1};

  for (int s = fixed ? 1 : 0; s < S; ++s) {
    const int prev = fixed ? s - 1 : 0;
    for (int m = 1; m < W; ++m) {
      for (int j = 1; j < n; ++j) {
        // Without a fixed count the single stage (already in the cell) competes.
        Cell best = fixed ? Cell{} : at(j, m, 0);
        for (int k : st.inside[j]) {
          const double compute = st.compute_ms[j] - st.compute_ms[k];
          const double params = st.param_bytes[j] - st.param_bytes[k];
          for (int mp = 1; mp <= m; ++mp) {
            const Cell& before = at(k, m - mp, prev);
            if (before.time == kInf) continue;
            double t = std::max(before.time, hybrid_stage_ms(compute, params, mp, o.bandwidth_gbps));
            if (o.transfers) {
              t = std::max(t, 2.0 * st.out_bytes[k] / (bw * mp));
              if (j < n - 1) t = std::max(t, 2.0 * st.out_bytes[j] / (bw * mp));
            }
            if (t < best.time) best = {t, k, m - mp, mp};
          }
        }
        at(j, m, s) = best;
      }
    }
  }

  HybridPlan plan;
  const Cell* c = &at(n - 1, W - 1, S - 1);
  if (c->time == kInf) return plan;
  plan.feasible = true;
  plan.pipeline_ms = c->time;
  int to = n - 1, s = S - 1;
  while (true) {
    HybridStage h;
    h.to_state = to;
    h.from_state = c->split_state;
    h.replicas = c->replicas;
    h.compute_ms = st.compute_ms[to] - (h.from_state >= 0 ? st.compute_ms[h.from_state] : 0.0);
    h.param_bytes = st.param_bytes[to] - (h.from_state >= 0 ? st.param_bytes[h.from_state] : 0.0);
    h.time_ms = hybrid_stage_ms(h.compute_ms, h.param_bytes, h.replicas, o.bandwidth_gbps);
    plan.stages.push_back(h);
    if (c->split_state < 0) break;
    to = c->split_state;
    s = fixed ? s - 1 : 0;
    c = &at(to, c->split_workers, s);
  }
  std::reverse(plan.stages.begin(), plan.stages.end());
  return plan;
}

}  // namespace pw
