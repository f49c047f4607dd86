#pragma once
#include <cstdint>
#include <string>

#include "core/plan/plan.h"

namespace pw {

// A plan in force from t_ns on, as a run records it (version 1: the
// initial plan; later ones come from replans, with their reason).
struct PlanVersion {
  int version = 1;
  std::int64_t t_ns = 0;
  std::string reason;
  Plan plan;
};

}  // namespace pw
