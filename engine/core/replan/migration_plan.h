#pragma once
#include <cstdint>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/plan/plan.h"

namespace pw {

// One layer changing owner between two plans, with what has to travel:
// weights, optimizer state and (async PipeDream) stashed weight versions.
struct LayerMove {
  int layer = 0;
  int from_stage = 0;
  int to_stage = 0;
  std::uint64_t bytes = 0;
};

// The moves that turn `from` into `to`, ordered by layer. Layers move
// directly between their old and new owner; `weight_versions` per stage
// (1 without stashing) sizes what moves.
std::vector<LayerMove> migration_moves(const Plan& from, const Plan& to, const ModelProfile& profile,
                                       const std::vector<int>& weight_versions = {});

std::uint64_t migration_bytes(const std::vector<LayerMove>& moves);

}  // namespace pw
