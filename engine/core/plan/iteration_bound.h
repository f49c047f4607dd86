#pragma once
#include "core/plan/planner.h"

namespace pw {

// A lower bound on the iteration time of every plan of `req`, whatever the
// partition, memory policy or schedule. These facts give it:
//  - every microbatch's forward and backward of every layer runs once on
//    some device, and the devices together do at most sum(1 / slowdown)
//    nominal milliseconds of work per millisecond;
//  - the busiest device runs every microbatch's forward and backward of
//    its own layers: at least busiest_device_work_ms per microbatch (whole
//    layers do not split evenly over many stages: 258 layers on 192 leave
//    some stage two, 1.5 times the average);
//  - where the schedule flushes (every kind but async PipeDream), an
//    iteration contains one microbatch's forward through every layer and
//    then its input gradients back through every layer, one after another
//    (the weight gradients may wait: split backward), on the fastest device
//    at best;
//  - under 1F1B and GPipe (one chunk per device, equal devices) the fill
//    and drain: stage k waits for the forwards before it and its last
//    backward passes back through them, so at least work / (1 - (1 -
//    1/m)^p) for the work of one microbatch (iteration_bound.cpp).
// Recompute, swaps, transfers, the optimizer step and the other bubbles
// only add to it. Infinite where no plan fits: the model's weights,
// gradients and optimizer state alone (which every partition and policy
// keeps on some device) exceed the stages' memory together. Used to skip
// microbatch sizes and (tensor, stages, replicas) splits that cannot beat
// a plan already found (microbatch_search.h, parallel_search.h).
double iteration_lower_bound_ms(const PlanRequest& req);

// The least forward + backward work per microbatch of the busiest device,
// over every way of placing the layers: one contiguous range per device
// (chunks 1, the schedule fixed) the least largest stage over contiguous
// partitions, each stage at its device's slowdown; otherwise (chunks, or
// "auto", which may choose a V) the smallest ceil(layers / devices) layers
// at the fastest device's speed, since some device holds that many.
double busiest_device_work_ms(const PlanRequest& req);

// A lower bound on the iteration of `plan` (its partition and policy fixed)
// under any order of a flushing schedule, by either measure (window or
// span): the busiest device runs every microbatch's forward, backward and
// recompute of its own virtual stages (req.chunks per device; a V puts
// virtual stages d and 2p-1-d on device d), stage_cost's figures at its
// slowdown, as the simulator charges them. Transfers, swaps and waits only
// add. 0 (no bound) for other chunk counts and for replicated stages.
// `auto` skips generating an order for a plan whose bound the best plan
// found already beats (planner.cpp).
double plan_work_bound_ms(const PlanRequest& req, const Plan& plan);

// Whether the model's weights, gradients and optimizer state fit in the
// stages' memory together (a necessary condition for any plan).
bool static_memory_fits(const PlanRequest& req);

}  // namespace pw
