#include "core/schedule/order_timeline.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw {

const char* to_string(IterationCost c) { return c == IterationCost::Window ? "window" : "span"; }

void OrderProblem::validate() const {
  if (devices < 1) throw std::invalid_argument("devices: must be >= 1, got " + std::to_string(devices));
  if (microbatches < 1) throw std::invalid_argument("microbatches: must be >= 1, got " + std::to_string(microbatches));
  if (static_cast<int>(stages.size()) != virtual_stages())
    throw std::invalid_argument("stages: " + std::to_string(stages.size()) + " entries, the placement has " +
                                std::to_string(virtual_stages()) + " virtual stages");
  for (size_t j = 0; j < stages.size(); ++j)
    if (!(stages[j].f > 0) || !(stages[j].b > 0) || !(stages[j].w >= 0))
      throw std::invalid_argument("stages[" + std::to_string(j) + "]: F and B must be > 0 and W >= 0");
  if (!(transfer >= 0)) throw std::invalid_argument("transfer: must be >= 0");
  if (!(released_at_b >= 0 && released_at_b <= 1)) throw std::invalid_argument("released_at_b: must be in [0, 1]");
  if (!hops.empty() && static_cast<int>(hops.size()) != virtual_stages() - 1)
    throw std::invalid_argument("hops: " + std::to_string(hops.size()) + " entries, the placement has " +
                                std::to_string(virtual_stages() - 1) + " cuts");
  for (size_t j = 0; j < hops.size(); ++j)
    if (!(hops[j] >= 0)) throw std::invalid_argument("hops[" + std::to_string(j) + "]: must be >= 0");
  if (!released.empty() && static_cast<int>(released.size()) != virtual_stages())
    throw std::invalid_argument("released: " + std::to_string(released.size()) + " entries, the placement has " +
                                std::to_string(virtual_stages()) + " virtual stages");
  // Per stage, B may also add memory (a negative share: W's stash larger
  // than what the forward kept, e.g. a recomputed layer that kept only its
  // input); W then frees the rest.
  if (!held.empty() && static_cast<int>(held.size()) != virtual_stages())
    throw std::invalid_argument("held: " + std::to_string(held.size()) + " entries, the placement has " +
                                std::to_string(virtual_stages()) + " virtual stages");
  for (size_t j = 0; j < held.size(); ++j)
    if (!(held[j] >= 0 && held[j] <= 1)) throw std::invalid_argument("held[" + std::to_string(j) + "]: must be in [0, 1]");
  for (size_t j = 0; j < released.size(); ++j)
    if (!(released[j] <= hold(static_cast<int>(j))))
      throw std::invalid_argument("released[" + std::to_string(j) + "]: must be <= what the stage's F holds (" +
                                  std::to_string(hold(static_cast<int>(j))) + ")");
  if (!memory_limit.empty() && static_cast<int>(memory_limit.size()) != devices)
    throw std::invalid_argument("memory_limit: " + std::to_string(memory_limit.size()) + " entries for " +
                                std::to_string(devices) + " devices");
  // A V-shaped device holds a microbatch on both its chunks at the turn.
  for (size_t d = 0; d < memory_limit.size(); ++d)
    if (!(memory_limit[d] >= least_held(static_cast<int>(d)) - 1e-12))
      throw std::invalid_argument("memory_limit[" + std::to_string(d) + "]: must be >= " +
                                  std::to_string(least_held(static_cast<int>(d))) +
                                  " unit(s) (one microbatch per chunk), got " + std::to_string(memory_limit[d]));
}

double OrderProblem::memory_delta(int device, const Action& a) const {
  const int vs = vstage(device, a.chunk);
  switch (a.kind) {
    case ActionKind::Forward: return hold(vs);
    case ActionKind::BackwardInput: return -release(vs);
    case ActionKind::BackwardWeight: return -(hold(vs) - release(vs));
    case ActionKind::Backward: return -hold(vs);
    case ActionKind::OptimizerStep: return 0;
  }
  return 0;
}

OrderTiming time_orders(const OrderProblem& pr, const std::vector<std::vector<Action>>& order) {
  const int p = pr.devices, m = pr.microbatches, V = pr.virtual_stages();
  constexpr double kUnset = -1;
  std::vector<double> f_end(static_cast<size_t>(V) * m, kUnset), b_end(f_end);
  auto at = [m](std::vector<double>& v, int vs, int mb) -> double& { return v[static_cast<size_t>(vs) * m + mb]; };
  OrderTiming t;
  t.first_start.assign(p, -1);
  t.last_end.assign(p, 0);
  t.peak_memory.assign(p, 0);
  std::vector<size_t> cursor(p, 0);
  std::vector<double> free(p, 0), memory(p, 0);
  // A device runs its actions until one waits for a message; whoever it
  // may have unblocked (its neighbours, as in the simulator) is tried next.
  std::vector<int> work;
  std::vector<bool> queued(p, true);
  for (int d = p - 1; d >= 0; --d) work.push_back(d);
  while (!work.empty()) {
    const int d = work.back();
    work.pop_back();
    queued[d] = false;
    bool progressed = false;
    while (cursor[d] < order[d].size()) {
      const Action& a = order[d][cursor[d]];
      if (a.kind == ActionKind::OptimizerStep) {
        ++cursor[d];
        continue;
      }
      const int vs = pr.vstage(d, a.chunk), mb = a.microbatch;
      const ActionTimes& c = pr.stages[vs];
      double ready = 0, dur = 0;
      if (a.kind == ActionKind::Forward) {
        if (vs > 0) {
          double e = at(f_end, vs - 1, mb);
          if (e == kUnset) break;
          ready = e + (pr.device_of(vs - 1) != d ? pr.hop(vs - 1) : 0);
        }
        dur = c.f;
      } else if (a.kind == ActionKind::BackwardWeight) {
        if (at(b_end, vs, mb) == kUnset) break;
        ready = at(b_end, vs, mb);
        dur = c.w;
      } else {
        const bool split = a.kind == ActionKind::BackwardInput;
        if (vs + 1 < V) {
          double e = at(b_end, vs + 1, mb);
          if (e == kUnset) break;
          ready = e + (pr.device_of(vs + 1) != d ? pr.hop(vs) : 0);
        } else {
          if (at(f_end, vs, mb) == kUnset) break;
          ready = at(f_end, vs, mb);
        }
        dur = split ? c.b : c.b + c.w;
      }
      const double start = std::max(free[d], ready), end = start + dur;
      if (t.first_start[d] < 0) t.first_start[d] = start;
      t.last_end[d] = end;
      free[d] = end;
      if (a.kind == ActionKind::Forward) at(f_end, vs, mb) = end;
      if (a.kind == ActionKind::BackwardInput || a.kind == ActionKind::Backward) at(b_end, vs, mb) = end;
      memory[d] += pr.memory_delta(d, a);
      t.peak_memory[d] = std::max(t.peak_memory[d], memory[d]);
      ++cursor[d];
      progressed = true;
    }
    if (!progressed) continue;
    for (int n : {d - 1, d + 1})
      if (n >= 0 && n < p && !queued[n] && cursor[n] < order[n].size()) {
        queued[n] = true;
        work.push_back(n);
      }
  }
  t.complete = true;
  for (int d = 0; d < p; ++d) {
    t.complete = t.complete && cursor[d] == order[d].size();
    t.makespan = std::max(t.makespan, t.last_end[d]);
    t.first_start[d] = std::max(0.0, t.first_start[d]);
    t.window = std::max(t.window, t.last_end[d] - t.first_start[d]);
  }
  return t;
}

bool within_memory(const OrderProblem& pr, const OrderTiming& t) {
  if (pr.memory_limit.empty()) return true;
  for (int d = 0; d < pr.devices; ++d)
    if (t.peak_memory[d] > pr.memory_limit[d] + 1e-9) return false;
  return true;
}

}  // namespace pw
