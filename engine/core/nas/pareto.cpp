#include "core/nas/pareto.h"

#include <algorithm>
#include <numeric>

namespace pw::nas {

std::vector<bool> pareto_front(const std::vector<TradeoffPoint>& p) {
  std::vector<int> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  // Fastest first, most accurate first among equally fast: a point is
  // dominated exactly when an earlier point of another (latency, accuracy)
  // pair is at least as accurate.
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    if (p[a].latency_ms != p[b].latency_ms) return p[a].latency_ms < p[b].latency_ms;
    return p[a].accuracy > p[b].accuracy;
  });
  std::vector<bool> on(p.size(), false);
  bool any = false;
  double best = 0;  // the best accuracy of the groups before the current one
  size_t i = 0;
  while (i < idx.size()) {
    // A group of identical points: all on the front or none.
    size_t j = i;
    while (j < idx.size() && p[idx[j]].latency_ms == p[idx[i]].latency_ms && p[idx[j]].accuracy == p[idx[i]].accuracy) ++j;
    const double acc = p[idx[i]].accuracy;
    if (!any || acc > best) {
      for (size_t k = i; k < j; ++k) on[idx[k]] = true;
      best = acc;
    }
    any = true;
    i = j;
  }
  return on;
}

std::vector<int> pareto_order(const std::vector<TradeoffPoint>& p, const std::vector<bool>& on_front) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(p.size()); ++i)
    if (i < static_cast<int>(on_front.size()) && on_front[i]) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    if (p[a].latency_ms != p[b].latency_ms) return p[a].latency_ms < p[b].latency_ms;
    return p[a].accuracy < p[b].accuracy;
  });
  return out;
}

}  // namespace pw::nas
