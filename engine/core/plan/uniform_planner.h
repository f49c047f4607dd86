#pragma once
#include "core/plan/planner.h"

namespace pw {

// Equal layer counts, every activation kept (Megatron / DeepSpeed default).
class UniformPlanner final : public Planner {
 public:
  std::string name() const override { return "uniform"; }
  Plan plan(const PlanRequest& req) const override;
};

}  // namespace pw
