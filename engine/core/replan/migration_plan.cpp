#include "core/replan/migration_plan.h"

#include <stdexcept>

namespace pw {

std::vector<LayerMove> migration_moves(const Plan& from, const Plan& to, const ModelProfile& profile,
                                       const std::vector<int>& weight_versions) {
  if (from.layer_count() != to.layer_count() || from.layer_count() != profile.size())
    throw std::invalid_argument("migration between plans of different models");
  std::vector<LayerMove> moves;
  for (int l = 0; l < profile.size(); ++l) {
    int a = from.stage_of(l), b = to.stage_of(l);
    if (a == b) continue;
    const auto& L = profile.layers[l];
    int versions = a < static_cast<int>(weight_versions.size()) ? weight_versions[a] : 1;
    // Gradients are not moved: ownership switches at an optimizer step.
    std::uint64_t bytes = static_cast<std::uint64_t>(versions) * L.param_bytes + L.optimizer_bytes;
    moves.push_back({l, a, b, bytes});
  }
  return moves;
}

std::uint64_t migration_bytes(const std::vector<LayerMove>& moves) {
  std::uint64_t total = 0;
  for (const auto& m : moves) total += m.bytes;
  return total;
}

}  // namespace pw
