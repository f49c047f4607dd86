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
// Each is the better (shorter window, then span) of the paper's building
// block (v_building_block.h: the authors' construction, reordered and as
// repeated) and the Zero Bubble authors' greedy list schedule
// (greedy_order.h), each at unit chunk costs (F = B = W), no transfer and
// B releasing nothing (W frees a microbatch, the paper's count), kept only
// if each device stays within the family's memory in chunk units (two per
// device microbatch, at most 2m): V-Half p + 2, V-Min floor(2(p+4)/3). The
// block wins at larger p (m = 4p, p = 16: bubbles 20.5 and 29.5 of 3m
// against the greedy's 39.5 and 54.0), the greedy at small p or m and
// wherever the block does not apply (docs/schedules.md). Fixed per (p, m),
// like zb-v's, so a plan, the simulator and every engine worker build the
// same order. Throws std::invalid_argument where no candidate fits.
std::unique_ptr<Schedule> make_v_half(int devices, int microbatches);
std::unique_ptr<Schedule> make_v_min(int devices, int microbatches);

// The family's per-device limit in chunk units (above).
double v_half_units(int devices, int microbatches);
double v_min_units(int devices, int microbatches);

}  // namespace pw
