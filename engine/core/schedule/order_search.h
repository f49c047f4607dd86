#pragma once
#include <cstdint>
#include <vector>

#include "core/schedule/order_timeline.h"

namespace pw {

// Whether timing `a` beats `b` for `pr`: a shorter iteration by the
// problem's objective (its window or its span, IterationCost), then by
// the other measure, then a smaller sum of the devices' last ends.
bool shorter_order(const OrderProblem& pr, const OrderTiming& a, const OrderTiming& b);

// Local search on a complete order within pr's memory limits (`timing` its
// time_orders): moves single actions of a device up to 4 places while that
// gives a shorter_order, for at most `search_budget` actions timed in all.
// Updates both in place.
void improve_order(const OrderProblem& pr, std::vector<std::vector<Action>>& order, OrderTiming& timing,
                   std::int64_t search_budget);

}  // namespace pw
