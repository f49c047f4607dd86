// The local search generate_order runs after its candidates.
#include "core/schedule/order_search.h"

#include <algorithm>

namespace pw {
namespace {

// Times are sums of the same costs in different orders.
constexpr double kEps = 1e-9;

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
// iteration (shorter_order: the objective, then the other measure, then
// the sum of the devices' last ends, which leads across plateaus and
// guarantees an end), within the memory limits.
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

}  // namespace

bool shorter_order(const OrderProblem& pr, const OrderTiming& a, const OrderTiming& b) {
  const IterationCost other = pr.objective == IterationCost::Window ? IterationCost::Span : IterationCost::Window;
  if (a.cost(pr.objective) < b.cost(pr.objective) - kEps) return true;
  if (a.cost(pr.objective) > b.cost(pr.objective) + kEps) return false;
  if (a.cost(other) < b.cost(other) - kEps) return true;
  if (a.cost(other) > b.cost(other) + kEps) return false;
  return sum_of_ends(a) < sum_of_ends(b) - kEps;
}

void improve_order(const OrderProblem& pr, std::vector<std::vector<Action>>& order, OrderTiming& timing,
                   std::int64_t search_budget) {
  struct {
    std::vector<std::vector<Action>>& order;
    OrderTiming& timing;
  } g{order, timing};
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
          if (t.complete && within_memory(pr, t) && shorter_order(pr, t, g.timing)) {
            g.timing = std::move(t);
            better = true;
          } else {
            undo_move(o, i, j);
          }
        }
  }
}


}  // namespace pw
