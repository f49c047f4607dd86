#include "core/schedule/controllable_memory.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/schedule/greedy_order.h"
#include "core/schedule/v_building_block.h"
#include "core/schedule/order_search.h"
#include "core/schedule/zero_bubble.h"

namespace pw {
namespace {

template <ScheduleKind K>
class ControlledV final : public VShapeSchedule {
 public:
  using VShapeSchedule::VShapeSchedule;
  ScheduleKind kind() const override { return K; }
};

// The candidates: the paper's building block, reordered and as repeated
// (v_building_block.h), and the greedy list schedule's variants, which
// stand in where the block does not apply and beat it at small m (below
// about p, where the block's warm-up and cool-down dominate) and at small
// p (p = 4, m = 16: V-Min's greedy order, at 5 chunk units, is 0.5 shorter
// than the block's, which holds 4).
std::vector<std::vector<Action>> build(const char* name, VBlock block, int p, int m, double units) {
  if (p < 1 || m < 1) throw std::invalid_argument(std::string(name) + " needs devices and microbatches >= 1");
  OrderProblem pr;
  pr.devices = p;
  pr.microbatches = m;
  pr.v_shape = true;
  pr.stages.assign(2 * p, ActionTimes{});
  pr.memory_limit.assign(p, units);
  std::vector<NamedOrder> candidates = greedy_orders(pr);
  for (bool reorder : {true, false})
    if (auto order = v_block_order(block, p, m, reorder); !order.empty())
      candidates.emplace_back(reorder ? "block reordered" : "block", std::move(order));
  std::vector<std::vector<Action>> best;
  OrderTiming best_t;
  for (auto& [label, order] : candidates) {
    OrderTiming t = time_orders(pr, order);
    if (!t.complete || !within_memory(pr, t)) continue;
    if (best.empty() || shorter_order(pr, t, best_t)) best = std::move(order), best_t = std::move(t);
  }
  if (best.empty())
    throw std::invalid_argument(std::string(name) + ": no order of " + std::to_string(p) + " devices x " +
                                std::to_string(m) + " microbatches within " + std::to_string(units) + " chunk units");
  return best;
}

// One order per (family, p, m): planners build a shape's schedule for every
// candidate they judge.
template <ScheduleKind K>
std::unique_ptr<Schedule> cached(const char* name, VBlock block, int p, int m, double units) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::vector<std::vector<Action>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({p, m});
  if (it == cache.end()) {
    if (cache.size() > 256) cache.clear();
    it = cache.emplace(std::make_pair(p, m), build(name, block, p, m, units)).first;
  }
  return std::make_unique<ControlledV<K>>(p, m, 2, it->second);
}

}  // namespace

double v_half_units(int p, int m) { return std::min(2.0 * m, static_cast<double>(p + 2)); }
double v_min_units(int p, int m) { return std::max(2.0, std::min(2.0 * m, std::floor(2.0 * (p + 4) / 3))); }

std::unique_ptr<Schedule> make_v_half(int p, int m) {
  return cached<ScheduleKind::VHalf>("v-half", VBlock::Half, p, m, v_half_units(p, m));
}
std::unique_ptr<Schedule> make_v_min(int p, int m) {
  return cached<ScheduleKind::VMin>("v-min", VBlock::Min, p, m, v_min_units(p, m));
}

}  // namespace pw
