#include "core/plan/planner_registry.h"

#include "core/plan/exact_planner.h"
#include "core/plan/gpipe_planner.h"
#include "core/plan/pipedream_planner.h"
#include "core/plan/uniform_planner.h"
#include "core/plan/vpipe_planner.h"

namespace pw {

const std::vector<PlannerEntry>& planner_registry() {
  static const std::vector<PlannerEntry> entries = {
      {"uniform", [] { return std::make_unique<UniformPlanner>(); }},
      {"vpipe", [] { return std::make_unique<VPipePlanner>(); }},
      {"gpipe", [] { return std::make_unique<GPipePlanner>(); }},
      {"pipedream", [] { return std::make_unique<PipeDreamPlanner>(); }},
      {"exact", [] { return std::make_unique<ExactPlanner>(); }},
  };
  return entries;
}

}  // namespace pw
