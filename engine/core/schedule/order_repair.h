#pragma once
#include <vector>

#include "core/schedule/action.h"
#include "core/schedule/order_timeline.h"

namespace pw {

// A hand-built order brought under pr's memory limits (issue 43). A
// published order above a cap is often the best shape just below it: V-Half
// holds p + 2 chunk units, a 1/2 cap at p = 16 allows 16, and the best
// order that fits (V-Min's, 12 units) loses V-Half's shorter warm-up,
// cool-down and its waits that take a transfer off the critical path.
// Walking each device's order, where an action would take the device past
// its limit, the device's earliest pending W (its B already run) moves up
// to run first, freeing its microbatch; where none is pending, the device's
// next backward moves up (its W then is). The order keeps every device's
// kinds in microbatch order; it may run slower than the original (a pass
// waits for a backward it used to precede) and is judged by its timing.
// Empty where an action still does not fit (no backward left to move up)
// or the order already fits.
std::vector<std::vector<Action>> fit_memory(const OrderProblem& pr, const std::vector<std::vector<Action>>& order);

}  // namespace pw
