#include "core/schedule/generated_order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/schedule/controllable_memory.h"
#include "core/schedule/greedy_order.h"
#include "core/schedule/order_repair.h"
#include "core/schedule/order_search.h"
#include "core/schedule/zero_bubble.h"

namespace pw {
namespace {

// Times are sums of the same costs in different orders.
constexpr double kEps = 1e-9;

}  // namespace

std::vector<NamedOrder> hand_built_orders(const OrderProblem& pr) {
  std::vector<NamedOrder> out;
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
    add("v-half", [&] { return make_v_half(p, m); });
    add("v-min", [&] { return make_v_min(p, m); });
  } else {
    add("1f1b", [&] { return make_one_f_one_b(p, m); });
    add("zb-h1", [&] { return make_zb_h1(p, m); });
    add("zb-h2", [&] { return make_zb_h2(p, m); });
  }
  return out;
}

namespace {

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
    // Shortest first (by the objective, shorter_order); at equal times, less memory.
    if (best && !shorter_order(pr, t, best->timing) &&
        (shorter_order(pr, best->timing, t) || memory >= best_memory))
      return;
    best = GeneratedOrder{std::move(order), std::move(t), std::move(source)};
    best_memory = memory;
  };
  // The heuristic's orders first: a hand-built one replaces them only where
  // it is strictly better (shorter, or as short with less memory).
  for (auto& [name, order] : greedy_orders(pr)) consider(name, std::move(order));
  for (auto& [name, order] : hand_built_orders(pr)) {
    // One above the limits may still be the best shape under them.
    if (OrderTiming t = time_orders(pr, order); t.complete && !within_memory(pr, t))
      if (auto fitted = fit_memory(pr, order); !fitted.empty()) consider(name + " fitted", std::move(fitted));
    consider(name, std::move(order));
  }
  for (const auto& [name, order] : extra)
    if (check_order(pr, order).empty()) consider(name, order);
  if (!best) throw std::runtime_error("generate_order: no order fits the memory limits");
  const double before = best->timing.cost(pr.objective);
  improve_order(pr, best->order, best->timing, search_budget);
  if (best->timing.cost(pr.objective) < before - kEps) best->source += " + local search";
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
    auto zbv = make_zb_v(devices, microbatches);  // V-ZB: 1x 1F1B's activations
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
