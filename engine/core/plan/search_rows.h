#pragma once
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "core/plan/plan.h"

namespace pw {

// What the searches over a job's degrees (microbatch_search, parallel_search)
// share for each candidate: they plan candidates in the order of a lower
// bound, and each candidate is a row that says its plan or why it has none.

// The row of a candidate not planned because its bound is already slower
// than the best plan found.
std::string not_planned_reason(double bound_ms);

// Plans one candidate with `plan`. A refusal (a spec error, a planner that
// cannot plan it) becomes the row's `reason`, the first one kept in
// `first_error` to rethrow when no candidate could be planned; nullopt then.
std::optional<Plan> plan_candidate(const std::function<Plan()>& plan, std::string& reason,
                                   std::exception_ptr& first_error);

}  // namespace pw
