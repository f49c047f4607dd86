#pragma once
// An evaluator of one-chunk F/B/W orders written apart from the generator's
// own (time_orders), so the generated-order tests check it against
// something independent: earliest start given each device's order, and the
// activation units each device holds after every action.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/schedule/action.h"

namespace pw::test {

struct OrderCosts {
  int p = 0, m = 0;
  std::vector<double> f, b, w;  // per stage
  std::vector<double> hop;      // per cut d -> d + 1
  std::vector<double> rel;      // per device: the share of a unit B frees; W frees the rest
};

// The order's span, -1 if it cannot run.
inline double order_span(const OrderCosts& x, const std::vector<std::vector<Action>>& order) {
  std::vector<std::vector<double>> fend(x.p, std::vector<double>(x.m, -1)), bend = fend;
  std::vector<std::size_t> cur(x.p, 0);
  std::vector<double> free(x.p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < x.p; ++d)
      for (; cur[d] < order[d].size(); ++cur[d], progress = true) {
        const Action& a = order[d][cur[d]];
        const int k = a.microbatch;
        double ready = 0, dur = 0;
        if (a.kind == ActionKind::OptimizerStep) continue;
        if (a.kind == ActionKind::Forward) {
          if (d > 0 && fend[d - 1][k] < 0) break;
          ready = d > 0 ? fend[d - 1][k] + x.hop[d - 1] : 0;
          dur = x.f[d];
        } else if (a.kind == ActionKind::BackwardWeight) {
          dur = x.w[d];
        } else {
          const double e = d + 1 < x.p ? bend[d + 1][k] : fend[d][k];
          if (e < 0) break;
          ready = e + (d + 1 < x.p ? x.hop[d] : 0);
          dur = a.kind == ActionKind::Backward ? x.b[d] + x.w[d] : x.b[d];
        }
        free[d] = std::max(free[d], ready) + dur;
        if (a.kind == ActionKind::Forward) fend[d][k] = free[d];
        if (a.kind == ActionKind::BackwardInput || a.kind == ActionKind::Backward) bend[d][k] = free[d];
      }
  }
  for (int d = 0; d < x.p; ++d)
    if (cur[d] != order[d].size()) return -1;
  return *std::max_element(free.begin(), free.end());
}

// The most units each device holds after any action.
inline std::vector<double> order_peaks(const OrderCosts& x, const std::vector<std::vector<Action>>& order) {
  std::vector<double> out(x.p, 0);
  for (int d = 0; d < x.p; ++d) {
    double held = 0;
    for (const Action& a : order[d]) {
      if (a.kind == ActionKind::Forward) held += 1;
      if (a.kind == ActionKind::BackwardInput) held -= x.rel[d];
      if (a.kind == ActionKind::BackwardWeight) held -= 1 - x.rel[d];
      if (a.kind == ActionKind::Backward) held -= 1;
      out[d] = std::max(out[d], held);
    }
  }
  return out;
}

}  // namespace pw::test
