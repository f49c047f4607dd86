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

// One maker for each name of planner_names() (core/spec/job_fields.h, the
// job format's list), in its order: add a planner there and here
// (test_planner_names holds the two equal).
const std::vector<PlannerEntry>& planner_registry();

}  // namespace pw
