#include "core/schedule/order_repair.h"

#include <algorithm>

namespace pw {
namespace {

// A device's three streams per chunk (F; B or a full backward; W), each run
// in microbatch order.
int stream(const Action& a) {
  return a.kind == ActionKind::Forward ? 0 : a.kind == ActionKind::BackwardWeight ? 2 : 1;
}

}  // namespace

std::vector<std::vector<Action>> fit_memory(const OrderProblem& pr, const std::vector<std::vector<Action>>& order) {
  const int p = pr.devices, m = pr.microbatches, v = pr.virtual_stages(), c = pr.chunks();
  if (pr.memory_limit.empty() || static_cast<int>(order.size()) != p) return {};
  std::vector<char> f_done(static_cast<size_t>(v) * m, 0), b_done(f_done);
  auto at = [m](std::vector<char>& x, int vs, int mb) -> char& { return x[static_cast<size_t>(vs) * m + mb]; };
  std::vector<std::vector<char>> done(p);
  std::vector<std::vector<int>> next(p, std::vector<int>(3 * c, 0));  // next microbatch per chunk and stream
  std::vector<size_t> first(p, 0);
  std::vector<double> memory(p, 0);
  std::vector<std::vector<Action>> out(p);
  for (int d = 0; d < p; ++d) done[d].assign(order[d].size(), 0);
  bool changed = false;

  // Whether action a leaves device d within its limit. A V's chunk-0 F
  // leaves room for a chunk-1 F: a device full of chunk-0 microbatches would
  // wait forever for the turn that frees one.
  auto fits = [&](int d, const Action& a) {
    const double room = pr.v_shape && a.kind == ActionKind::Forward && a.chunk == 0 ? pr.hold(pr.vstage(d, 1)) : 0;
    return memory[d] + pr.memory_delta(d, a) + room <= pr.memory_limit[d] + 1e-9;
  };
  // Whether action i of device d may run now: its input is there, it is
  // next in its stream, and the device stays within its limit.
  auto runnable = [&](int d, size_t i) {
    const Action& a = order[d][i];
    if (a.kind == ActionKind::OptimizerStep || a.chunk >= c || a.microbatch < 0 || a.microbatch >= m) return false;
    const int vs = pr.vstage(d, a.chunk), mb = a.microbatch;
    if (next[d][3 * a.chunk + stream(a)] != mb) return false;
    bool input = true;
    if (a.kind == ActionKind::Forward)
      input = vs == 0 || at(f_done, vs - 1, mb);
    else if (a.kind == ActionKind::BackwardWeight)
      input = at(b_done, vs, mb);
    else
      input = vs + 1 == v ? at(f_done, vs, mb) : at(b_done, vs + 1, mb);
    return input && fits(d, a);
  };
  auto run = [&](int d, size_t i) {
    const Action& a = order[d][i];
    const int vs = pr.vstage(d, a.chunk);
    if (a.kind == ActionKind::Forward) at(f_done, vs, a.microbatch) = 1;
    if (a.kind == ActionKind::BackwardInput || a.kind == ActionKind::Backward) at(b_done, vs, a.microbatch) = 1;
    ++next[d][3 * a.chunk + stream(a)];
    memory[d] += pr.memory_delta(d, a);
    done[d][i] = 1;
    out[d].push_back(a);
  };
  // One step of device d: its next action in the original order where it
  // can run; where that one is held back by the limit (not by a missing
  // input, which the original order waits for too), the first later W that
  // can run, else the first later backward that can.
  auto step = [&](int d) {
    auto& f = first[d];
    while (f < order[d].size() && (done[d][f] || order[d][f].kind == ActionKind::OptimizerStep)) ++f;
    if (f == order[d].size()) return false;
    if (runnable(d, f)) {
      run(d, f);
      return true;
    }
    if (fits(d, order[d][f])) return false;  // waits for its input
    // W's first (each frees memory), then backwards, then the other chunk's
    // forwards (a V's turn).
    for (int kind : {2, 1, 0})
      for (size_t i = f + 1; i < order[d].size(); ++i) {
        const Action& b = order[d][i];
        if (done[d][i] || stream(b) != kind) continue;
        if (runnable(d, i)) {
          run(d, i);
          changed = true;
          return true;
        }
      }
    return false;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int d = 0; d < p; ++d)
      while (step(d)) progress = true;
  }
  for (int d = 0; d < p; ++d) {
    if (out[d].size() + 1 != order[d].size()) return {};  // stuck: some device waits forever
    out[d].push_back({ActionKind::OptimizerStep, 0, 0});
  }
  if (!changed) return {};
  return out;
}

}  // namespace pw
