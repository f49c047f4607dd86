#include "core/analysis/critical_path.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/events/event_kinds.h"

namespace pw {

CriticalPath critical_path(const std::vector<Event>& events, const Attribution& a, int iteration) {
  CriticalPath cp;
  cp.iteration = iteration;
  const int stages = a.stages;
  cp.stage_ns.assign(std::max(stages, 0), 0);
  // The path ends where the last stage's own work does: the others' windows
  // of the last iteration run on to the same end, idle (drain, imbalance).
  std::vector<std::int64_t> tail(std::max(stages, 0), 0);
  for (auto it = a.intervals.rbegin(); it != a.intervals.rend(); ++it) {
    if (it->iteration != iteration || it->peer >= 0) continue;
    if (it->cause != IdleCause::Drain && it->cause != IdleCause::Imbalance) continue;
    for (const auto& w : a.stage_iterations)
      if (w.stage == it->stage && w.iteration == iteration && w.end_ns - tail[it->stage] == it->end_ns)
        tail[it->stage] += it->end_ns - it->start_ns;
  }
  std::int64_t start = std::numeric_limits<std::int64_t>::max(), end = std::numeric_limits<std::int64_t>::min();
  int last_stage = -1;
  for (const auto& s : a.stage_iterations) {
    if (s.iteration != iteration) continue;
    start = std::min(start, s.start_ns);
    if (s.end_ns - tail[s.stage] > end) end = s.end_ns - tail[s.stage], last_stage = s.stage;
  }
  if (last_stage < 0) return cp;
  // Per stage: its idle intervals and its compute events, by time. All
  // iterations' intervals: in the engine a stage's iteration starts when its
  // own previous step ends, so the walk may reach into a peer's previous one.
  std::vector<std::vector<const IdleInterval*>> idle(stages);
  for (const auto& i : a.intervals)
    if (i.end_ns > start && i.start_ns < end) idle[i.stage].push_back(&i);
  std::vector<std::vector<const Event*>> compute(stages);
  for (const auto& e : events)
    if (is_compute(e.kind) && e.stage >= 0 && e.stage < stages && e.end_ns > start && e.start_ns < end)
      compute[e.stage].push_back(&e);
  for (auto& v : compute)
    std::sort(v.begin(), v.end(), [](const Event* x, const Event* y) { return x->start_ns < y->start_ns; });

  // The idle interval of `s` that reaches t from the left (start < t <= end), if any.
  auto idle_at = [&](int s, std::int64_t t) -> const IdleInterval* {
    const auto& v = idle[s];
    auto it = std::lower_bound(v.begin(), v.end(), t, [](const IdleInterval* x, std::int64_t u) { return x->end_ns < u; });
    return it != v.end() && (*it)->start_ns < t ? *it : nullptr;
  };
  // The latest idle end of `s` before t (where its compute before t began).
  auto idle_before = [&](int s, std::int64_t t) -> std::int64_t {
    const auto& v = idle[s];
    auto it = std::lower_bound(v.begin(), v.end(), t, [](const IdleInterval* x, std::int64_t u) { return x->end_ns < u; });
    return it == v.begin() ? start : (*std::prev(it))->end_ns;
  };

  std::vector<PathStep> rev;
  int s = last_stage;
  std::int64_t t = end;
  for (std::size_t guard = 0; t > start && guard < 4 * events.size() + 16; ++guard) {
    if (const IdleInterval* w = idle_at(s, t)) {
      // A wait for a peer's compute is not the path: the peer's action that
      // ended when the wait did is, so the chain goes on there.
      const bool on_peer = w->peer >= 0 && w->peer != s && w->end_ns == t &&
                           (w->cause == IdleCause::Fill || w->cause == IdleCause::Drain || w->cause == IdleCause::Dependency);
      if (on_peer) {
        s = w->peer;
        continue;
      }
      PathStep st;
      st.stage = s;
      st.start_ns = std::max(w->start_ns, start);
      st.end_ns = t;
      st.cause = w->cause;
      st.microbatch = w->microbatch;
      rev.push_back(st);
      t = st.start_ns;
      continue;
    }
    // Compute: the actions of `s` between its previous idle interval and t.
    std::int64_t c0 = std::max(idle_before(s, t), start);
    const auto& v = compute[s];
    auto it = std::lower_bound(v.begin(), v.end(), t, [](const Event* x, std::int64_t u) { return x->start_ns < u; });
    std::int64_t cur = t;
    while (it != v.begin() && cur > c0) {
      --it;
      const Event* e = *it;
      if (e->end_ns <= c0) break;
      PathStep st;
      st.stage = s;
      st.compute = true;
      st.kind = e->kind;
      st.microbatch = e->microbatch;
      st.start_ns = std::max(e->start_ns, c0);
      st.end_ns = cur;
      rev.push_back(st);
      cur = st.start_ns;
    }
    if (cur > c0) {  // busy but not an action (optimizer, policy work): attributed intervals cover it
      PathStep st;
      st.stage = s;
      st.compute = true;
      st.start_ns = c0;
      st.end_ns = cur;
      rev.push_back(st);
    }
    if (c0 >= t) break;  // no progress: the attribution does not cover t
    t = c0;
  }
  cp.start_ns = t;
  cp.end_ns = end;
  cp.steps.assign(rev.rbegin(), rev.rend());
  for (const auto& st : cp.steps) {
    const std::int64_t d = st.end_ns - st.start_ns;
    cp.stage_ns[st.stage] += d;
    if (st.compute) cp.compute_ns += d;
    else cp.cause_ns[static_cast<int>(st.cause)] += d;
  }
  return cp;
}

}  // namespace pw
