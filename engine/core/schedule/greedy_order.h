#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/schedule/order_timeline.h"

namespace pw {

// Named per-device orders (each ending with the optimizer step).
using NamedOrder = std::pair<std::string, std::vector<std::vector<Action>>>;

// The Zero Bubble authors' automatic heuristic (ZB-1p / ZB-2p) run on `pr`
// in each of its variants (F or B first, idling for a B about to arrive,
// warm-up capped at 1F1B's or ZB-H2's count, which chunk first in a V):
// a list schedule in time order where the earliest-free device runs a B
// whose gradient has arrived, else an F its memory limit allows, else a
// pending W. Variants that deadlock under the limit (a V held too tight)
// are left out; the rest are named "greedy <variant>". Not timed or
// filtered: generate_order judges them.
std::vector<NamedOrder> greedy_orders(const OrderProblem& pr);

}  // namespace pw
