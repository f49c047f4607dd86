#pragma once
#include "core/plan/planner.h"

namespace pw {

// A lower bound on the iteration time of every plan of `req`, whatever the
// partition, memory policy or schedule. Two facts give it:
//  - every microbatch's forward and backward of every layer runs once on
//    some device, and the devices together do at most sum(1 / slowdown)
//    nominal milliseconds of work per millisecond;
//  - where the schedule flushes (every kind but async PipeDream), an
//    iteration contains one microbatch's forward through every layer and
//    then its input gradients back through every layer, one after another
//    (the weight gradients may wait: split backward), on the fastest device
//    at best.
// Recompute, swaps, transfers, the optimizer step and the other bubbles
// only add to it. Used to skip microbatch sizes that cannot beat a plan
// already found (microbatch_search.h).
double iteration_lower_bound_ms(const PlanRequest& req);

}  // namespace pw
