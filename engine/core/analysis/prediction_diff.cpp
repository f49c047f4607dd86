#include "core/analysis/prediction_diff.h"

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>

#include "core/events/event_kinds.h"

namespace pw {
namespace {

// Each stage's iteration windows, by start: which iteration an event of
// the stage belongs to.
class Windows {
 public:
  explicit Windows(const Attribution& a) {
    for (const auto& s : a.stage_iterations) {
      if (s.stage < 0) continue;
      if (static_cast<std::size_t>(s.stage) >= by_stage_.size()) by_stage_.resize(static_cast<std::size_t>(s.stage) + 1);
      by_stage_[static_cast<std::size_t>(s.stage)].push_back(&s);
    }
    for (auto& v : by_stage_)
      std::sort(v.begin(), v.end(), [](const StageIteration* x, const StageIteration* y) { return x->start_ns < y->start_ns; });
  }
  // The iteration whose window on the event's stage holds its start; -1: none.
  int iteration_of(const Event& e) const {
    if (e.stage < 0 || static_cast<std::size_t>(e.stage) >= by_stage_.size()) return -1;
    const auto& v = by_stage_[static_cast<std::size_t>(e.stage)];
    auto it = std::upper_bound(v.begin(), v.end(), e.start_ns,
                               [](std::int64_t t, const StageIteration* w) { return t < w->start_ns; });
    if (it == v.begin()) return -1;
    --it;
    return e.start_ns < (*it)->end_ns ? (*it)->iteration : -1;
  }

 private:
  std::vector<std::vector<const StageIteration*>> by_stage_;
};

struct Timeline {
  std::int64_t origin = 0;
  std::int64_t length = 0;
  std::map<int, std::vector<const Event*>> actions;  // per stage, by start
};

// Every iteration's timeline in one pass over the events (index: iteration),
// so that pooling all iterations of a long run costs no more than one.
std::vector<Timeline> timelines(const std::vector<Event>& events, const Attribution& a) {
  const int n = std::max(a.iterations, 0);
  std::vector<Timeline> t(static_cast<std::size_t>(n));
  std::vector<std::int64_t> end(t.size(), std::numeric_limits<std::int64_t>::min());
  for (const auto& s : a.stage_iterations)
    if (s.iteration >= 0 && s.iteration < n) end[static_cast<std::size_t>(s.iteration)] = std::max(end[static_cast<std::size_t>(s.iteration)], s.end_ns);
  const std::vector<int> of = iteration_of_events(events, a);
  for (std::size_t i = 0; i < events.size(); ++i)
    if (is_action(events[i].kind) && of[i] >= 0 && of[i] < n)
      t[static_cast<std::size_t>(of[i])].actions[events[i].stage].push_back(&events[i]);
  const auto starts = iteration_starts(events, a);
  for (std::size_t k = 0; k < t.size(); ++k) {
    for (auto& [s, v] : t[k].actions)
      std::sort(v.begin(), v.end(), [](const Event* x, const Event* y) { return x->start_ns < y->start_ns; });
    t[k].origin = starts[k];
    t[k].length = end[k] > t[k].origin ? end[k] - t[k].origin : 0;
  }
  return t;
}

const Timeline& at(const std::vector<Timeline>& t, int iteration) {
  static const Timeline kEmpty;
  return iteration >= 0 && iteration < static_cast<int>(t.size()) ? t[static_cast<std::size_t>(iteration)] : kEmpty;
}

// Sums each stage's and kind's action time (means are taken by the caller).
void tally(const Timeline& t, bool is_measured, std::map<std::pair<int, int>, KindComparison>& kinds) {
  for (const auto& [s, v] : t.actions)
    for (const Event* e : v) {
      auto& k = kinds[{s, static_cast<int>(e->kind)}];
      k.stage = s;
      k.kind = e->kind;
      const double ms = static_cast<double>(e->end_ns - e->start_ns) / 1e6;
      if (is_measured) k.measured_ms += ms, ++k.measured_count;
      else k.predicted_ms += ms, ++k.predicted_count;
    }
}

std::vector<KindComparison> means(std::map<std::pair<int, int>, KindComparison>& kinds) {
  std::vector<KindComparison> out;
  for (auto& [key, k] : kinds) {
    if (k.measured_count) k.measured_ms /= k.measured_count;
    if (k.predicted_count) k.predicted_ms /= k.predicted_count;
    out.push_back(k);
  }
  return out;
}

}  // namespace

std::vector<int> iteration_of_events(const std::vector<Event>& events, const Attribution& a) {
  const Windows w(a);
  std::vector<int> out(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) out[i] = w.iteration_of(events[i]);
  return out;
}

std::vector<std::int64_t> iteration_starts(const std::vector<Event>& events, const Attribution& a) {
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> compute(static_cast<std::size_t>(std::max(a.iterations, 0)), kNone), window = compute;
  for (const auto& s : a.stage_iterations)
    if (s.iteration >= 0 && s.iteration < a.iterations)
      window[static_cast<std::size_t>(s.iteration)] = std::min(window[static_cast<std::size_t>(s.iteration)], s.start_ns);
  const Windows w(a);
  for (const auto& e : events) {
    if (!is_compute(e.kind)) continue;
    const int i = w.iteration_of(e);
    if (i >= 0 && i < a.iterations) compute[static_cast<std::size_t>(i)] = std::min(compute[static_cast<std::size_t>(i)], e.start_ns);
  }
  for (std::size_t i = 0; i < compute.size(); ++i)
    if (compute[i] == kNone) compute[i] = window[i] == kNone ? 0 : window[i];
  return compute;
}

struct PredictionComparison::Timelines {
  std::vector<Timeline> measured, predicted;
};

PredictionComparison::PredictionComparison(const std::vector<Event>& measured, const Attribution& ma,
                                           const std::vector<Event>& predicted, const Attribution& pa)
    : t_(std::make_unique<Timelines>(Timelines{timelines(measured, ma), timelines(predicted, pa)})) {}

PredictionComparison::~PredictionComparison() = default;

PredictionDiff PredictionComparison::iteration(int mi, int pi, std::int64_t threshold_ns) const {
  PredictionDiff d;
  const Timeline &m = at(t_->measured, mi), &p = at(t_->predicted, pi);
  d.measured_iteration_ns = m.length;
  d.predicted_iteration_ns = p.length;
  d.threshold_ns = threshold_ns >= 0 ? threshold_ns : p.length / 20;
  std::map<std::pair<int, int>, KindComparison> kinds;
  tally(m, true, kinds);
  tally(p, false, kinds);
  d.kinds = means(kinds);
  for (const auto& [s, v] : m.actions) {
    auto pit = p.actions.find(s);
    if (pit == p.actions.end()) continue;
    for (std::size_t i = 0; i < v.size() && i < pit->second.size(); ++i) {
      const Event *me = v[i], *pe = pit->second[i];
      const std::int64_t mo = me->start_ns - m.origin, po = pe->start_ns - p.origin;
      if (std::llabs(mo - po) <= d.threshold_ns) continue;
      if (!d.divergence || mo < d.divergence->measured_offset_ns)
        d.divergence = Divergence{s, me->kind, me->microbatch, static_cast<int>(i), mo, po,
                                  me->end_ns - me->start_ns, pe->end_ns - pe->start_ns};
      break;  // later actions of this stage start later
    }
  }
  return d;
}

PredictionDiff PredictionComparison::pooled(const std::vector<std::pair<int, int>>& pairs) const {
  PredictionDiff d;
  d.iterations = 0;
  std::map<std::pair<int, int>, KindComparison> kinds;
  double measured_ns = 0, predicted_ns = 0;
  for (const auto& [mi, pi] : pairs) {
    const Timeline &m = at(t_->measured, mi), &p = at(t_->predicted, pi);
    measured_ns += static_cast<double>(m.length);
    predicted_ns += static_cast<double>(p.length);
    tally(m, true, kinds);
    tally(p, false, kinds);
    ++d.iterations;
  }
  if (d.iterations) {
    d.measured_iteration_ns = std::llround(measured_ns / d.iterations);
    d.predicted_iteration_ns = std::llround(predicted_ns / d.iterations);
  }
  d.kinds = means(kinds);
  return d;
}

PredictionDiff compare_prediction(const std::vector<Event>& measured, const Attribution& ma, int mi,
                                  const std::vector<Event>& predicted, const Attribution& pa, int pi,
                                  std::int64_t threshold_ns) {
  return PredictionComparison(measured, ma, predicted, pa).iteration(mi, pi, threshold_ns);
}

PredictionDiff pool_predictions(const std::vector<Event>& measured, const Attribution& ma,
                                const std::vector<Event>& predicted, const Attribution& pa,
                                const std::vector<std::pair<int, int>>& pairs) {
  return PredictionComparison(measured, ma, predicted, pa).pooled(pairs);
}

double model_error(const PredictionDiff& d) {
  double total = 0;
  if (d.predicted_iteration_ns > 0)
    total = std::abs(static_cast<double>(d.measured_iteration_ns) / static_cast<double>(d.predicted_iteration_ns) - 1.0);
  double off = 0, measured = 0;
  for (const auto& k : d.kinds) {
    off += std::abs(k.measured_ms - k.predicted_ms) * k.measured_count;
    measured += k.measured_ms * k.measured_count;
  }
  return std::max(total, measured > 0 ? off / measured : 0.0);
}

}  // namespace pw
