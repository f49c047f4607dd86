#include "core/layout/plan_layout.h"

#include <stdexcept>

namespace pw {

const char* to_string(MemoryPolicy p) {
  switch (p) {
    case MemoryPolicy::Keep: return "keep";
    case MemoryPolicy::Recompute: return "recompute";
    case MemoryPolicy::Swap: return "swap";
    case MemoryPolicy::Selective: return "selective";
  }
  return "?";
}

std::optional<MemoryPolicy> memory_policy_from_string(const std::string& s) {
  if (s == "keep") return MemoryPolicy::Keep;
  if (s == "recompute") return MemoryPolicy::Recompute;
  if (s == "swap") return MemoryPolicy::Swap;
  if (s == "selective") return MemoryPolicy::Selective;
  return std::nullopt;
}

int Plan::stage_of(int layer) const {
  for (size_t s = 0; s < stages.size(); ++s)
    if (layer >= stages[s].first_layer && layer <= stages[s].last_layer) return static_cast<int>(s);
  return -1;
}


void validate_plan(const Plan& plan, int layers) {
  if (static_cast<int>(plan.policy.size()) != layers)
    throw std::invalid_argument("plan has a policy for " + std::to_string(plan.policy.size()) +
                                " layers, the model has " + std::to_string(layers));
  int next = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const auto& r = plan.stages[s];
    if (r.first_layer != next || r.last_layer < r.first_layer)
      throw std::invalid_argument("plan stage " + std::to_string(s) + " holds layers [" +
                                  std::to_string(r.first_layer) + ", " + std::to_string(r.last_layer) +
                                  "], expected a non-empty range starting at " + std::to_string(next));
    next = r.last_layer + 1;
  }
  if (next != layers)
    throw std::invalid_argument("plan covers " + std::to_string(next) + " of " + std::to_string(layers) + " layers");
}

}  // namespace pw
