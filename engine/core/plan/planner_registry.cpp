#include "core/plan/planner_registry.h"

#include "core/plan/uniform_planner.h"

namespace pw {

const std::vector<PlannerEntry>& planner_registry() {
  static const std::vector<PlannerEntry> entries = {
      {"uniform", [] { return std::make_unique<UniformPlanner>(); }},
  };
  return entries;
}

}  // namespace pw
