#include "core/analysis/prediction_diff.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>

namespace pw {
namespace {

bool is_action(EventKind k) { return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::OptimizerStep; }

struct Timeline {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  std::int64_t length = 0;
  std::map<int, std::vector<const Event*>> actions;  // per stage, by start
};

Timeline timeline(const std::vector<Event>& events, const Attribution& a, int iteration) {
  Timeline t;
  std::map<int, std::pair<std::int64_t, std::int64_t>> window;
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  for (const auto& s : a.stage_iterations)
    if (s.iteration == iteration) window[s.stage] = {s.start_ns, s.end_ns}, end = std::max(end, s.end_ns);
  for (const auto& e : events) {
    if (!is_action(e.kind)) continue;
    auto w = window.find(e.stage);
    if (w == window.end() || e.start_ns < w->second.first || e.start_ns >= w->second.second) continue;
    t.actions[e.stage].push_back(&e);
    if (e.kind != EventKind::OptimizerStep) t.origin = std::min(t.origin, e.start_ns);
  }
  for (auto& [s, v] : t.actions)
    std::sort(v.begin(), v.end(), [](const Event* x, const Event* y) { return x->start_ns < y->start_ns; });
  if (t.origin == std::numeric_limits<std::int64_t>::max()) t.origin = 0;
  t.length = end > t.origin ? end - t.origin : 0;
  return t;
}

}  // namespace

PredictionDiff compare_prediction(const std::vector<Event>& measured, const Attribution& ma, int mi,
                                  const std::vector<Event>& predicted, const Attribution& pa, int pi,
                                  std::int64_t threshold_ns) {
  PredictionDiff d;
  Timeline m = timeline(measured, ma, mi), p = timeline(predicted, pa, pi);
  d.measured_iteration_ns = m.length;
  d.predicted_iteration_ns = p.length;
  d.threshold_ns = threshold_ns >= 0 ? threshold_ns : p.length / 20;
  std::map<std::pair<int, int>, KindComparison> kinds;
  auto tally = [&](const Timeline& t, bool is_measured) {
    for (const auto& [s, v] : t.actions)
      for (const Event* e : v) {
        auto& k = kinds[{s, static_cast<int>(e->kind)}];
        k.stage = s;
        k.kind = e->kind;
        const double ms = static_cast<double>(e->end_ns - e->start_ns) / 1e6;
        if (is_measured) k.measured_ms += ms, ++k.measured_count;
        else k.predicted_ms += ms, ++k.predicted_count;
      }
  };
  tally(m, true);
  tally(p, false);
  for (auto& [key, k] : kinds) {
    if (k.measured_count) k.measured_ms /= k.measured_count;
    if (k.predicted_count) k.predicted_ms /= k.predicted_count;
    d.kinds.push_back(k);
  }
  for (const auto& [s, v] : m.actions) {
    auto pit = p.actions.find(s);
    if (pit == p.actions.end()) continue;
    for (std::size_t i = 0; i < v.size() && i < pit->second.size(); ++i) {
      const std::int64_t mo = v[i]->start_ns - m.origin, po = pit->second[i]->start_ns - p.origin;
      if (std::llabs(mo - po) <= d.threshold_ns) continue;
      if (!d.divergence || v[i]->start_ns - m.origin < d.divergence->measured_offset_ns)
        d.divergence = Divergence{s, v[i]->kind, v[i]->microbatch, static_cast<int>(i), mo, po};
      break;  // later actions of this stage start later
    }
  }
  return d;
}

}  // namespace pw
