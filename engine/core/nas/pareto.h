#pragma once
#include <vector>

namespace pw::nas {

// A scored subnet as the search trade-off sees it: higher accuracy and
// lower latency are better.
struct TradeoffPoint {
  double accuracy = 0;
  double latency_ms = 0;
};

// on_front[i]: no other point is at least as accurate and at least as fast
// while strictly better in one of the two. Equal points are all on the
// front (neither dominates the other). O(n log n).
std::vector<bool> pareto_front(const std::vector<TradeoffPoint>& points);

// Indices of the front's points by increasing latency (then accuracy): the
// order a plot joins them in. Equal points appear once each.
std::vector<int> pareto_order(const std::vector<TradeoffPoint>& points, const std::vector<bool>& on_front);

}  // namespace pw::nas
