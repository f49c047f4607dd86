#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/planner.h"

namespace pw {

struct PlannerEntry {
  std::string name;
  std::function<std::unique_ptr<Planner>()> make;
};

// The one list of planners; add a planner here.
const std::vector<PlannerEntry>& planner_registry();

}  // namespace pw
