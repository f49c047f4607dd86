#include "core/plan/search_rows.h"

#include <cmath>
#include <cstdio>

namespace pw {

std::string not_planned_reason(double bound_ms) {
  if (!std::isfinite(bound_ms))
    return "not planned: its weights, gradients and optimizer state alone exceed the devices' memory";
  char why[96];
  std::snprintf(why, sizeof why, "not planned: none of its plans can take under %.2f ms", bound_ms);
  return why;
}

std::optional<Plan> plan_candidate(const std::function<Plan()>& plan, std::string& reason,
                                   std::exception_ptr& first_error) {
  try {
    return plan();
  } catch (const std::exception& e) {
    reason = e.what();
    if (!first_error) first_error = std::current_exception();
    return std::nullopt;
  }
}

}  // namespace pw
