#pragma once
#include <memory>

#include "core/schedule/schedule.h"

namespace pw {

// The controllable-memory V family (Qi et al., "Pipeline Parallelism with
// Controllable Memory", NeurIPS'24): V orders (device d holds virtual
// stages d and 2p-1-d, as zb-v) whose devices keep at most a set share of
// 1F1B's activations in flight. In device-microbatch units, where 1F1B's
// busiest device holds p: V-ZB (= our zb-v) p, V-Half (p+2)/2, V-Min
// (p+4)/3; bubbles about 0, p/(2m) and 2p/(3m) of the work.
//
// The paper builds each from a repeated building block; we build them by a
// fixed rule instead (docs/schedules.md): the Zero Bubble authors' greedy
// list schedule (greedy_order.h) at unit chunk costs (F = B = W), no
// transfer and B releasing nothing (W frees a microbatch, the paper's
// count), with each device limited to the family's memory in chunk units
// (two per device microbatch, at most 2m): V-Half p + 2, V-Min
// floor(2(p+4)/3); of the variants that finish, the one with the shortest
// window (then span). Fixed per (p, m), like zb-v's, so a plan and every
// engine worker build the same order. Throws std::invalid_argument where
// no variant finishes under the limit.
std::unique_ptr<Schedule> make_v_half(int devices, int microbatches);
std::unique_ptr<Schedule> make_v_min(int devices, int microbatches);

// The family's per-device limit in chunk units (above).
double v_half_units(int devices, int microbatches);
double v_min_units(int devices, int microbatches);

}  // namespace pw
