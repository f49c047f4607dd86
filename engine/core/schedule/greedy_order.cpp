// The Zero Bubble authors' greedy list schedule (their ZB-1p / ZB-2p
// "automatic scheduling"), in the variants generate_order tries.
#include "core/schedule/greedy_order.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>

namespace pw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Times are sums of the same costs in different orders: an arrival a
// rounding error past `now` has arrived.
constexpr double kEps = 1e-9;

struct Variant {
  bool f_first = false;     // an F its memory allows before a B that has arrived
  double wait_for_b = 0;    // idle (in F's of this stage) for a B about to arrive rather than start an F or W
  int cap = 0;              // warm-up cap: 0 none, 1 1F1B's p-d per chunk, 2 ZB-H2's 2(p-d)-1 per chunk
  bool deep_f_first = true;  // V: chunk 1's forward before chunk 0's
  bool deep_b_first = true;  // V: chunk 1's B before chunk 0's
  std::string name() const {
    std::string s = f_first ? "F-first" : "B-first";
    if (wait_for_b > 0) s += " wait " + std::to_string(wait_for_b).substr(0, 4);
    if (cap == 1) s += " cap 1f1b";
    if (cap == 2) s += " cap zb-h2";
    if (!deep_f_first) s += " F chunk 0 first";
    if (!deep_b_first) s += " B chunk 0 first";
    return s;
  }
};

// The ZB-1p/2p heuristic as a list schedule in time order: the device with
// the earliest free time picks its next action from what has arrived by
// then. Whatever is picked starts at that time, so producers always act
// before the consumers they could wake, and a device with nothing to do
// sleeps until an arrival.
class Greedy {
 public:
  Greedy(const OrderProblem& pr, const Variant& v)
      : pr_(pr), v_(v), p_(pr.devices), m_(pr.microbatches), V_(pr.virtual_stages()) {
    f_arr_.assign(static_cast<size_t>(V_) * m_, -1);
    b_arr_ = f_arr_;
    for (int mb = 0; mb < m_; ++mb) f_arr_[mb] = 0;  // virtual stage 0's inputs are there
    next_f_.assign(V_, 0);
    next_b_.assign(V_, 0);
    now_.assign(p_, 0);
    idle_.assign(p_, false);
    memory_.assign(p_, 0);
    reserved_.assign(p_, 0);
    pending_w_.resize(p_);
    order_.resize(p_);
    cap_.resize(p_);
    need_.resize(p_);
    for (int d = 0; d < p_; ++d) {
      double lim = pr.memory_limit.empty() ? kInf : pr.memory_limit[d];
      const int c = pr.chunks();
      if (v_.cap == 1) lim = std::min(lim, static_cast<double>(c * (p_ - d)));
      if (v_.cap == 2) lim = std::min(lim, static_cast<double>(c * (2 * (p_ - d) - 1)));
      // An F reserves what its microbatch will hold at most (its share of
      // a unit, more where B adds W's stash); the least any order holds is
      // one microbatch per chunk.
      double least = 0;
      need_[d] = kInf;
      for (int k = 0; k < c; ++k) {
        least += pr.most_held(pr.vstage(d, k));
        need_[d] = std::min(need_[d], pr.most_held(pr.vstage(d, k)));
      }
      cap_[d] = std::max(lim, least);
    }
  }

  // The order, or nothing if it deadlocked (a V under a tight limit).
  std::optional<std::vector<std::vector<Action>>> run() {
    for (;;) {
      int d = -1;
      for (int e = 0; e < p_; ++e)
        if (!done(e) && now_[e] < kInf && (d < 0 || now_[e] < now_[d])) d = e;
      if (d < 0) break;
      step(d);
    }
    for (int d = 0; d < p_; ++d)
      if (!done(d)) return std::nullopt;
    for (auto& o : order_) o.push_back({ActionKind::OptimizerStep, 0, -1});
    return std::move(order_);
  }

 private:
  double& f_arr(int vs, int mb) { return f_arr_[static_cast<size_t>(vs) * m_ + mb]; }
  double& b_arr(int vs, int mb) { return b_arr_[static_cast<size_t>(vs) * m_ + mb]; }

  bool done(int d) const {
    if (!pending_w_[d].empty()) return false;
    for (int c = 0; c < pr_.chunks(); ++c) {
      int vs = pr_.vstage(d, c);
      if (next_f_[vs] < m_ || next_b_[vs] < m_) return false;
    }
    return true;
  }

  // Virtual stages of device d in the order the variant tries them; on the
  // stack, as every step asks twice (the vector allocated here cost about
  // a tenth of `auto`'s planning time, issue 43).
  struct Stages {
    int vs[2];
    int n;
    const int* begin() const { return vs; }
    const int* end() const { return vs + n; }
  };
  Stages stages_of(int d, bool deep_first) const {
    if (pr_.chunks() == 1) return {{d, d}, 1};
    return deep_first ? Stages{{pr_.vstage(d, 1), pr_.vstage(d, 0)}, 2} : Stages{{pr_.vstage(d, 0), pr_.vstage(d, 1)}, 2};
  }

  int ready_b(int d, double t) {
    for (int vs : stages_of(d, v_.deep_b_first)) {
      int mb = next_b_[vs];
      if (mb < m_ && b_arr(vs, mb) >= 0 && b_arr(vs, mb) <= t + kEps) return vs;
    }
    return -1;
  }

  int ready_f(int d, double t) {
    for (int vs : stages_of(d, v_.deep_f_first)) {
      if (reserved_[d] + pr_.most_held(vs) > cap_[d] + kEps) continue;
      // In a V, a chunk-0 F leaves room for one chunk-1 F: a device full of
      // chunk-0 microbatches would wait forever for the chunk-1 forward
      // that lets one of them turn back (V-Min's and V-Half's limits).
      if (pr_.v_shape && vs == pr_.vstage(d, 0) &&
          reserved_[d] + pr_.most_held(vs) + pr_.most_held(pr_.vstage(d, 1)) > cap_[d] + kEps)
        continue;
      int mb = next_f_[vs];
      if (mb < m_ && f_arr(vs, mb) >= 0 && f_arr(vs, mb) <= t + kEps) return vs;
    }
    return -1;
  }

  // The earliest known arrival after t that could let device d act.
  double next_arrival(int d, double t, bool b_only) {
    double best = kInf;
    for (int c = 0; c < pr_.chunks(); ++c) {
      int vs = pr_.vstage(d, c);
      if (next_b_[vs] < m_ && b_arr(vs, next_b_[vs]) > t + kEps) best = std::min(best, b_arr(vs, next_b_[vs]));
      if (!b_only && next_f_[vs] < m_ && f_arr(vs, next_f_[vs]) > t + kEps)
        best = std::min(best, f_arr(vs, next_f_[vs]));
    }
    return best;
  }

  void arrive(int vs, int mb, double t, bool forward) {
    (forward ? f_arr(vs, mb) : b_arr(vs, mb)) = t;
    int e = pr_.device_of(vs);
    if (idle_[e] && t < now_[e]) now_[e] = t;
  }

  void run_action(int d, ActionKind k, int vs, int mb, double t) {
    const ActionTimes& c = pr_.stages[vs];
    const int chunk = pr_.vstage(d, 0) == vs ? 0 : 1;
    order_[d].push_back({k, static_cast<std::uint16_t>(chunk), mb});
    idle_[d] = false;
    double end = t;
    if (k == ActionKind::Forward) {
      end += c.f;
      memory_[d] += pr_.hold(vs);
      reserved_[d] += pr_.most_held(vs);
      ++next_f_[vs];
      if (vs + 1 < V_)
        arrive(vs + 1, mb, end + (pr_.device_of(vs + 1) != d ? pr_.hop(vs) : 0), true);
      else
        arrive(vs, mb, end, false);  // the last virtual stage's B needs only its F
    } else if (k == ActionKind::BackwardInput) {
      end += c.b;
      memory_[d] -= pr_.release(vs);
      reserved_[d] -= pr_.most_held(vs) - (pr_.hold(vs) - pr_.release(vs));  // now holds hold - release
      ++next_b_[vs];
      pending_w_[d].push_back({vs, mb});
      if (vs > 0) arrive(vs - 1, mb, end + (pr_.device_of(vs - 1) != d ? pr_.hop(vs - 1) : 0), false);
    } else {
      end += c.w;
      memory_[d] -= pr_.hold(vs) - pr_.release(vs);
      reserved_[d] -= pr_.hold(vs) - pr_.release(vs);
    }
    now_[d] = end;
  }

  void step(int d) {
    const double t = now_[d];
    int b = ready_b(d, t), f = ready_f(d, t);
    if (v_.f_first && f >= 0) b = -1;
    if (b < 0 && v_.wait_for_b > 0) {
      // Starting an F or W now would delay a B due soon: idle for it.
      double soon = next_arrival(d, t, true);
      double f_time = pr_.stages[pr_.vstage(d, 0)].f;
      if (soon < kInf && soon - t < v_.wait_for_b * f_time - kEps && (f >= 0 || !pending_w_[d].empty())) {
        now_[d] = soon;
        idle_[d] = true;
        return;
      }
    }
    if (b >= 0) return run_action(d, ActionKind::BackwardInput, b, next_b_[b], t);
    if (f >= 0) return run_action(d, ActionKind::Forward, f, next_f_[f], t);
    if (!pending_w_[d].empty()) {
      auto [vs, mb] = pending_w_[d].front();
      pending_w_[d].pop_front();
      order_[d].push_back({ActionKind::BackwardWeight, static_cast<std::uint16_t>(pr_.vstage(d, 0) == vs ? 0 : 1), mb});
      idle_[d] = false;
      now_[d] = t + pr_.stages[vs].w;
      memory_[d] -= pr_.hold(vs) - pr_.release(vs);
      reserved_[d] -= pr_.hold(vs) - pr_.release(vs);
      return;
    }
    // Nothing to do: sleep until a known arrival, or until a producer wakes it.
    now_[d] = next_arrival(d, t, reserved_[d] + need_[d] > cap_[d] + kEps);
    idle_[d] = true;
  }

  const OrderProblem& pr_;
  Variant v_;
  int p_, m_, V_;
  std::vector<double> f_arr_, b_arr_;  // when an input / output gradient is at the virtual stage's device
  std::vector<int> next_f_, next_b_;   // per virtual stage, in microbatch order
  std::vector<double> now_, memory_, cap_, need_;
  // memory_ plus, per microbatch between its F and B, the growth its B may
  // bring: what an F must leave room for. need_: the least an F reserves
  // on the device (with no room for it, only a B can wake the device).
  std::vector<double> reserved_;
  std::vector<bool> idle_;
  std::vector<std::deque<std::pair<int, int>>> pending_w_;  // (virtual stage, microbatch) after its B
  std::vector<std::vector<Action>> order_;
};

std::vector<Variant> variants(const OrderProblem& pr) {
  std::vector<Variant> out;
  for (bool f_first : {false, true})
    for (double wait : {0.0, 0.5, 1.0})
      for (int cap : {0, 1, 2})
        for (bool deep_f : {true, false})
          for (bool deep_b : {true, false}) {
            if (!pr.v_shape && (!deep_f || !deep_b)) continue;
            out.push_back({f_first, wait, cap, deep_f, deep_b});
          }
  return out;
}

}  // namespace

std::vector<NamedOrder> greedy_orders(const OrderProblem& pr) {
  std::vector<NamedOrder> out;
  for (const Variant& v : variants(pr))
    if (auto order = Greedy(pr, v).run()) out.emplace_back("greedy " + v.name(), std::move(*order));
  return out;
}

}  // namespace pw
