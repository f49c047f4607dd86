#include "core/schedule/generated_order.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/schedule/zero_bubble.h"

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
      // An F reserves what its microbatch will hold at most: one unit, or
      // more where B adds W's stash (a negative release).
      need_[d] = 1;
      for (int k = 0; k < c; ++k) need_[d] = std::max(need_[d], 1 - pr.release(pr.vstage(d, k)));
      cap_[d] = std::max(lim, c * need_[d]);
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

  // Virtual stages of device d in the order the variant tries them.
  std::vector<int> stages_of(int d, bool deep_first) const {
    if (pr_.chunks() == 1) return {d};
    return deep_first ? std::vector<int>{pr_.vstage(d, 1), pr_.vstage(d, 0)}
                      : std::vector<int>{pr_.vstage(d, 0), pr_.vstage(d, 1)};
  }

  int ready_b(int d, double t) {
    for (int vs : stages_of(d, v_.deep_b_first)) {
      int mb = next_b_[vs];
      if (mb < m_ && b_arr(vs, mb) >= 0 && b_arr(vs, mb) <= t + kEps) return vs;
    }
    return -1;
  }

  int ready_f(int d, double t) {
    if (reserved_[d] + need_[d] > cap_[d] + kEps) return -1;
    for (int vs : stages_of(d, v_.deep_f_first)) {
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
      memory_[d] += 1;
      reserved_[d] += need_[d];
      ++next_f_[vs];
      if (vs + 1 < V_)
        arrive(vs + 1, mb, end + (pr_.device_of(vs + 1) != d ? pr_.hop(vs) : 0), true);
      else
        arrive(vs, mb, end, false);  // the last virtual stage's B needs only its F
    } else if (k == ActionKind::BackwardInput) {
      end += c.b;
      memory_[d] -= pr_.release(vs);
      reserved_[d] -= need_[d] - (1 - pr_.release(vs));  // now holds 1 - release
      ++next_b_[vs];
      pending_w_[d].push_back({vs, mb});
      if (vs > 0) arrive(vs - 1, mb, end + (pr_.device_of(vs - 1) != d ? pr_.hop(vs - 1) : 0), false);
    } else {
      end += c.w;
      memory_[d] -= 1 - pr_.release(vs);
      reserved_[d] -= 1 - pr_.release(vs);
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
      memory_[d] -= 1 - pr_.release(vs);
      reserved_[d] -= 1 - pr_.release(vs);
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
  // bring (need_ - 1): what an F must leave room for.
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

// The hand-built orders of pr's placement, by name; shapes a family
// refuses are left out.
std::vector<std::pair<std::string, std::vector<std::vector<Action>>>> hand_built(const OrderProblem& pr) {
  std::vector<std::pair<std::string, std::vector<std::vector<Action>>>> out;
  const int p = pr.devices, m = pr.microbatches;
  auto add = [&](const std::string& name, auto make) {
    try {
      out.emplace_back(name, order_of(*make()));
    } catch (const std::invalid_argument&) {
    }
  };
  if (pr.v_shape) {
    add("zb-v", [&] { return make_zb_v(p, m); });
    add("dualpipe-v", [&] { return make_dualpipe_v(p, m); });
  } else {
    add("1f1b", [&] { return make_schedule(ScheduleKind::OneFOneB, p, m, 1); });
    add("zb-h1", [&] { return make_zb_h1(p, m); });
    add("zb-h2", [&] { return make_zb_h2(p, m); });
  }
  return out;
}

double sum_of_ends(const OrderTiming& t) {
  double s = 0;
  for (double e : t.last_end) s += e;
  return s;
}

// Whether two neighbours of one device's order may trade places: not a
// microbatch's own F, B, W (their order is fixed) and not two of one kind
// on one chunk (each kind runs in microbatch order).
bool swappable(const Action& a, const Action& b) {
  if (a.kind == ActionKind::OptimizerStep || b.kind == ActionKind::OptimizerStep) return false;
  if (a.chunk == b.chunk && (a.microbatch == b.microbatch || a.kind == b.kind)) return false;
  return true;
}

// Local search after the heuristic: moves one action of a device up to
// kReach places later or earlier in its order while that shortens the
// iteration (or, at equal length, the sum of the devices' last ends, which
// leads across plateaus and guarantees an end), within the memory limits.
// The greedy's local choices miss, e.g., deferring the last stage's W's
// past its final F and B so those reach upstream sooner. Bounded by a
// budget of timed actions so that large shapes stay fast.
constexpr int kReach = 4;

// Moves o[i] to position j (shifting those between), if it may pass each.
bool move(std::vector<Action>& o, size_t i, size_t j) {
  if (j > i) {
    for (size_t k = i + 1; k <= j; ++k)
      if (!swappable(o[i], o[k])) return false;
    std::rotate(o.begin() + i, o.begin() + i + 1, o.begin() + j + 1);
  } else {
    for (size_t k = j; k < i; ++k)
      if (!swappable(o[k], o[i])) return false;
    std::rotate(o.begin() + j, o.begin() + i, o.begin() + i + 1);
  }
  return true;
}

void undo_move(std::vector<Action>& o, size_t i, size_t j) {
  if (j > i)
    std::rotate(o.begin() + i, o.begin() + j, o.begin() + j + 1);
  else
    std::rotate(o.begin() + j, o.begin() + j + 1, o.begin() + i + 1);
}

void improve(const OrderProblem& pr, GeneratedOrder& g, std::int64_t search_budget) {
  std::int64_t actions = 0;
  for (const auto& o : g.order) actions += static_cast<std::int64_t>(o.size());
  std::int64_t budget = search_budget / std::max<std::int64_t>(1, actions);
  bool better = true;
  while (better && budget > 0) {
    better = false;
    for (size_t d = 0; d < g.order.size() && budget > 0; ++d)
      for (size_t i = 0; i < g.order[d].size() && budget > 0; ++i)
        for (int delta = -kReach; delta <= kReach && budget > 0; ++delta) {
          auto& o = g.order[d];
          if (delta == 0 || static_cast<std::int64_t>(i) + delta < 0 || i + delta >= o.size()) continue;
          const size_t j = i + delta;
          if (!move(o, i, j)) continue;
          --budget;
          OrderTiming t = time_orders(pr, g.order);
          const bool shorter = t.makespan < g.timing.makespan - kEps ||
                               (t.makespan < g.timing.makespan + kEps && sum_of_ends(t) < sum_of_ends(g.timing) - kEps);
          if (t.complete && within_memory(pr, t) && shorter) {
            g.timing = std::move(t);
            better = true;
          } else {
            undo_move(o, i, j);
          }
        }
  }
}

class GeneratedSchedule final : public ListSchedule {
 public:
  using ListSchedule::ListSchedule;
  ScheduleKind kind() const override { return ScheduleKind::Generated; }
  bool splits_backward() const override { return true; }
};

class GeneratedVSchedule final : public VShapeSchedule {
 public:
  using VShapeSchedule::VShapeSchedule;
  ScheduleKind kind() const override { return ScheduleKind::Generated; }
};

}  // namespace

std::vector<std::vector<Action>> order_of(const Schedule& s) {
  std::vector<std::vector<Action>> o(s.devices());
  for (int d = 0; d < s.devices(); ++d)
    for (std::int64_t i = 0; i < s.length(d); ++i) o[d].push_back(s.action(d, i));
  return o;
}

std::string order_to_text(const std::vector<Action>& order) {
  std::string out;
  for (const Action& a : order) {
    if (!out.empty()) out += ' ';
    switch (a.kind) {
      case ActionKind::Forward: out += 'F'; break;
      case ActionKind::Backward: out += 'X'; break;
      case ActionKind::BackwardInput: out += 'B'; break;
      case ActionKind::BackwardWeight: out += 'W'; break;
      case ActionKind::OptimizerStep: out += 'S'; continue;
    }
    out += std::to_string(a.microbatch);
    if (a.chunk != 0) out += ":" + std::to_string(a.chunk);
  }
  return out;
}

std::vector<Action> order_from_text(const std::string& text) {
  std::vector<Action> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    const std::string tok = text.substr(i, end - i);
    i = end;
    Action a;
    switch (tok[0]) {
      case 'F': a.kind = ActionKind::Forward; break;
      case 'X': a.kind = ActionKind::Backward; break;
      case 'B': a.kind = ActionKind::BackwardInput; break;
      case 'W': a.kind = ActionKind::BackwardWeight; break;
      case 'S':
        if (tok.size() != 1) throw std::invalid_argument("order: cannot read \"" + tok + "\"");
        out.push_back({ActionKind::OptimizerStep, 0, -1});
        continue;
      default: throw std::invalid_argument("order: cannot read \"" + tok + "\" (F, B, W, X or S)");
    }
    const size_t colon = tok.find(':');
    const std::string mb = tok.substr(1, colon == std::string::npos ? std::string::npos : colon - 1);
    const std::string chunk = colon == std::string::npos ? "0" : tok.substr(colon + 1);
    auto number = [&](const std::string& s, long most) {
      if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos || std::stol(s) > most)
        throw std::invalid_argument("order: cannot read \"" + tok + "\"");
      return std::stol(s);
    };
    a.microbatch = static_cast<std::int32_t>(number(mb, 1L << 30));
    a.chunk = static_cast<std::uint16_t>(number(chunk, 1));
    out.push_back(a);
  }
  return out;
}

std::string check_order(const OrderProblem& pr, const std::vector<std::vector<Action>>& order) {
  const int p = pr.devices, m = pr.microbatches, c = pr.chunks();
  if (static_cast<int>(order.size()) != p)
    return std::to_string(order.size()) + " device orders for " + std::to_string(p) + " devices";
  for (int d = 0; d < p; ++d) {
    const std::string dev = "device " + std::to_string(d) + ": ";
    const auto& o = order[d];
    if (o.empty() || o.back().kind != ActionKind::OptimizerStep) return dev + "does not end with the optimizer step";
    // Next expected microbatch per (chunk, kind): F, B-or-full, W.
    std::vector<int> next_f(c, 0), next_b(c, 0), next_w(c, 0);
    std::vector<std::vector<bool>> full(c, std::vector<bool>(m, false));
    for (size_t i = 0; i + 1 < o.size(); ++i) {
      const Action& a = o[i];
      const std::string at = dev + "action " + std::to_string(i) + ": ";
      if (a.kind == ActionKind::OptimizerStep) return at + "an optimizer step before the end";
      if (a.chunk >= c) return at + "chunk " + std::to_string(a.chunk) + " of " + std::to_string(c);
      const int k = a.chunk, mb = a.microbatch;
      if (a.kind == ActionKind::Forward) {
        if (mb != next_f[k]) return at + "F" + std::to_string(mb) + " out of microbatch order";
        ++next_f[k];
      } else if (a.kind == ActionKind::BackwardInput || a.kind == ActionKind::Backward) {
        if (mb != next_b[k]) return at + "backward " + std::to_string(mb) + " out of microbatch order";
        if (mb >= next_f[k]) return at + "backward " + std::to_string(mb) + " before its forward";
        full[k][mb] = a.kind == ActionKind::Backward;
        ++next_b[k];
        if (full[k][mb] && next_w[k] == mb) ++next_w[k];
      } else {
        if (mb != next_w[k] || mb >= next_b[k] || full[k][mb])
          return at + "W" + std::to_string(mb) + " out of order or without its B";
        ++next_w[k];
      }
      while (next_w[k] < next_b[k] && full[k][next_w[k]]) ++next_w[k];
    }
    for (int k = 0; k < c; ++k)
      if (next_f[k] != m || next_b[k] != m || next_w[k] != m)
        return dev + "chunk " + std::to_string(k) + " does not run every microbatch's F, B and W once";
  }
  OrderProblem unit = pr;
  unit.memory_limit.clear();
  if (!time_orders(unit, order).complete) return "some device waits forever (the order deadlocks)";
  return "";
}

GeneratedOrder generate_order(const OrderProblem& pr, std::int64_t search_budget) {
  return generate_order(pr, search_budget, {});
}

GeneratedOrder generate_order(const OrderProblem& pr, std::int64_t search_budget, const std::vector<NamedOrder>& extra) {
  pr.validate();
  std::optional<GeneratedOrder> best;
  double best_memory = 0;
  auto consider = [&](std::string source, std::vector<std::vector<Action>> order) {
    OrderTiming t = time_orders(pr, order);
    if (!t.complete || !within_memory(pr, t)) return;
    double memory = 0;
    for (double x : t.peak_memory) memory += x;
    // Shortest first; at equal time, less memory.
    if (best && (t.makespan > best->timing.makespan + kEps ||
                 (t.makespan > best->timing.makespan - kEps && memory >= best_memory)))
      return;
    best = GeneratedOrder{std::move(order), std::move(t), std::move(source)};
    best_memory = memory;
  };
  // The heuristic's orders first: a hand-built one replaces them only where
  // it is strictly better (shorter, or as short with less memory).
  for (const Variant& v : variants(pr)) {
    auto order = Greedy(pr, v).run();
    if (order) consider("greedy " + v.name(), std::move(*order));
  }
  for (auto& [name, order] : hand_built(pr)) consider(name, std::move(order));
  for (const auto& [name, order] : extra)
    if (check_order(pr, order).empty()) consider(name, order);
  if (!best) throw std::runtime_error("generate_order: no order fits the memory limits");
  const double before = best->timing.makespan;
  improve(pr, *best, search_budget);
  if (best->timing.makespan < before - kEps) best->source += " + local search";
  return std::move(*best);
}

OrderProblem default_order_problem(int devices, int microbatches, int chunks) {
  if (chunks != 1 && chunks != 2)
    throw std::invalid_argument("generated schedule: chunks must be 1 (one stage per device) or 2 (a V), got " +
                                std::to_string(chunks));
  OrderProblem pr;
  pr.devices = devices;
  pr.microbatches = microbatches;
  pr.v_shape = chunks == 2;
  pr.stages.assign(pr.virtual_stages(), ActionTimes{});
  if (pr.v_shape) {
    auto zbv = make_zb_v(devices, microbatches);
    int most = 0;
    for (int d = 0; d < devices; ++d) most = std::max(most, zbv->in_flight(d));
    pr.memory_limit.assign(devices, std::max(most, 2));
  } else {
    pr.memory_limit.assign(devices, std::min(microbatches, devices));
  }
  return pr;
}

std::unique_ptr<Schedule> make_generated_schedule(const OrderProblem& pr, const GeneratedOrder& g) {
  if (pr.v_shape) return std::make_unique<GeneratedVSchedule>(pr.devices, pr.microbatches, 2, g.order);
  return std::make_unique<GeneratedSchedule>(pr.devices, pr.microbatches, 1, g.order);
}

// At unit costs the heuristic and the hand-built orders leave the local
// search little to find; a small budget keeps `auto`'s planning time.
constexpr std::int64_t kQuickSearch = 1'000'000;

std::unique_ptr<Schedule> make_generated(int devices, int microbatches, int chunks) {
  OrderProblem pr = default_order_problem(devices, microbatches, chunks);
  // Planners build the schedule of a shape for every candidate they
  // evaluate; the order depends on the shape alone, so it is made once.
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, GeneratedOrder> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(devices, microbatches, chunks);
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() > 256) cache.clear();
    it = cache.emplace(key, generate_order(pr, kQuickSearch)).first;
  }
  return make_generated_schedule(pr, it->second);
}

}  // namespace pw
