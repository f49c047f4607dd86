#include "core/plan/uniform_planner.h"

#include <stdexcept>
#include <string>

namespace pw {

Plan UniformPlanner::plan(const PlanRequest& req) const {
  int layers = req.profile->size();
  int v = req.stages * req.chunks;
  if (v > layers)
    throw std::invalid_argument("cannot split " + std::to_string(layers) + " layers into " + std::to_string(v) +
                                " stages");
  return uniform_partition(layers, v);
}

}  // namespace pw
