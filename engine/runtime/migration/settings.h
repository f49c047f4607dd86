#pragma once
#include <vector>

#include "core/plan/plan.h"
#include "core/spec/runtime_spec.h"

namespace pw::rt::migration {

// The job's "runtime" section, parsed and checked by the core
// (core/spec/runtime_spec.h) so that every command refuses the same jobs.
using Settings = RuntimeSpec;

// `base` with its stage ranges replaced.
Plan with_stages(const Plan& base, const std::vector<StageRange>& stages);

}  // namespace pw::rt::migration
