#pragma once
#include "core/plan/planner.h"

namespace pw {

// GPipe's (torchgpipe's) choice: a block partition balancing per-stage
// time (torchgpipe's balance_by_time, min-max optimal), with every layer's
// activations recomputed in backward. Stage time counts the recompute
// (forward twice + backward), the time the stage actually takes.
class GPipePlanner final : public Planner {
 public:
  std::string name() const override { return "gpipe"; }
  Plan plan(const PlanRequest& req) const override;
};

}  // namespace pw
