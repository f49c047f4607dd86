#include "core/nas/supernet_partition.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace pw::nas {

double expected_layer_ms(const ChoiceLayer& layer) {
  double s = 0;
  for (const auto& c : layer.candidates) s += c.cost.fwd_ms + c.cost.bwd_ms + c.cost.optimizer_ms;
  return layer.candidates.empty() ? 0 : s / layer.candidates.size();
}

std::vector<StageSlots> partition_supernet(const SearchSpace& space, int stages) {
  int n = space.size();
  if (stages < 1) throw std::invalid_argument("need >= 1 stage");
  if (stages > n)
    throw std::invalid_argument("supernet has " + std::to_string(n) + " choice layers, fewer than " +
                                std::to_string(stages) + " stages");
  std::vector<double> prefix(n + 1, 0);
  for (int l = 0; l < n; ++l) prefix[l + 1] = prefix[l] + expected_layer_ms(space.layers[l]);
  double stem = space.has_stem ? space.stem.fwd_ms + space.stem.bwd_ms : 0;
  double head = space.has_head ? space.head.fwd_ms + space.head.bwd_ms : 0;
  auto cost = [&](int s, int a, int b) {  // stage s holds layers [a, b)
    double c = prefix[b] - prefix[a];
    if (s == 0) c += stem;
    if (s == stages - 1) c += head;
    return c;
  };
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: min over partitions of layers [0, i) into stages 0..s-1.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, -1));
  best[0][0] = 0;
  // The last stage may hold the head alone when that is what balances: a
  // vocabulary projection can outweigh a whole stage of choice layers.
  const int head_only = space.has_head && stages > 1 ? 1 : 0;
  for (int s = 1; s <= stages; ++s)
    for (int i = s; i <= std::min(n, n - (stages - s) + head_only); ++i)
      for (int j = s - 1; j < i + (s == stages ? head_only : 0); ++j) {
        if (best[s - 1][j] == inf) continue;
        double v = std::max(best[s - 1][j], cost(s - 1, j, i));
        if (v < best[s][i]) {
          best[s][i] = v;
          cut[s][i] = j;
        }
      }
  std::vector<StageSlots> out(stages);
  int i = n;
  for (int s = stages; s >= 1; --s) {
    int j = cut[s][i];
    out[s - 1] = {j, i - 1};
    i = j;
  }
  return out;
}

std::vector<StageSlots> refine_partition_for_csp(const SupernetSimInput& in, int probe) {
  if (!in.sequence || in.stages.size() < 2) return in.stages;
  std::vector<Subnet> prefix(in.sequence->begin(),
                             in.sequence->begin() + std::min<std::size_t>(in.sequence->size(), probe));
  SupernetSimInput trial = in;
  trial.sequence = &prefix;
  auto speed = [&](const std::vector<StageSlots>& st) {
    trial.stages = st;
    return simulate_supernet(trial).subnets_per_s;
  };
  std::vector<StageSlots> best = in.stages;
  double best_speed = speed(best);
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t s = 0; s + 1 < best.size(); ++s)
      for (int d : {-1, +1}) {
        auto cand = best;
        cand[s].last += d;
        cand[s + 1].first += d;
        bool head_only = s + 2 == best.size() && in.space->has_head;  // the last stage may hold the head alone
        if (cand[s].size() < 1 || cand[s + 1].size() < (head_only ? 0 : 1)) continue;
        double v = speed(cand);
        if (v > best_speed * (1 + 1e-9)) best = cand, best_speed = v, improved = true;
      }
  }
  return best;
}

}  // namespace pw::nas
