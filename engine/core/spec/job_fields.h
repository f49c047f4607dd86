#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pw {

// A job's numeric fields with a fixed range, as data: the parser reads each
// with its range (job_spec.cpp) and the studio's designer builds its form
// from the same rows, so neither accepts what the other refuses
// (docs/jobs.md, "Bounds"; the maxima are spec_bounds.h's).
struct FieldRange {
  std::string_view path;  // "model.layers"
  double min = 0, max = 0;
  bool integer = true;
};

// Every row, in the job file's order.
const std::vector<FieldRange>& job_field_ranges();
// The row of `path`; throws std::out_of_range naming it when there is none.
const FieldRange& job_field_range(std::string_view path);

// model.kind's values, in the order the designer offers them.
const std::vector<std::string>& model_kind_names();

// pipeline.planner's and runtime.replan.planner's values, in the order the
// CLI lists them. Names are the job format's, so the spec owns the list;
// plan/planner_registry makes a planner for each (a test holds the two
// equal), and the parser need not reach up to the planners to check one.
std::vector<std::string> planner_names();

}  // namespace pw
