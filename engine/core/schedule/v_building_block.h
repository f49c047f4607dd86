#pragma once
#include <vector>

#include "core/schedule/action.h"

namespace pw {

// The V-Half and V-Min building blocks of Qi et al., "Pipeline Parallelism
// with Controllable Memory" (NeurIPS'24), as their authors' generator lays
// them out (docs/schedules.md, "V-Half and V-Min").
enum class VBlock { Half, Min };

// Per-device orders (device d runs chunk 0 at virtual stage d and chunk 1 at
// 2p-1-d; each order ends with the optimizer step) built from the family's
// block: each device's F, B of both chunks of one microbatch at fixed slots
// of a unit-time grid (the block; its lifespan on a device sets what the
// device holds), the block repeated every 6 slots (a device's six unit
// passes per microbatch), W's filling the free slots. `reorder` then moves
// the warm-up's and the cool-down's passes to the earliest free slot their
// dependencies allow while no device holds more than the repeated block did
// at its worst (the paper's squeezing and reordering); without it the
// order is the repeated block's. Empty where the block does not apply: one
// device, or a block whose passes would collide when repeated (none do for
// p >= 2, but it is checked, not assumed). It runs for every m >= 1, but
// its warm-up and cool-down are a block's length whatever m is, so below
// m ~ p other orders beat it (controllable_memory.h judges both).
// Deterministic per (block, devices, microbatches): no ties are left to
// chance (passes are taken by slot, then device, pass and microbatch).
std::vector<std::vector<Action>> v_block_order(VBlock block, int devices, int microbatches, bool reorder);

}  // namespace pw
