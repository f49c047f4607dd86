#pragma once
#include <string>

#include "core/plan/plan.h"
#include "core/spec/job_spec.h"

namespace pw::rt::migration {

// The stop-the-world path: rewrites a checkpoint directory written under
// plan `from` (stage<k>.pt: parameters and optimizer state) into the files
// of plan `to`, layer by layer, so a restarted run resumes on the new
// partition with bitwise the same state. `out_dir` may not be `in_dir`.
void repartition_checkpoint(const JobSpec& job, const Plan& from, const Plan& to, const std::string& in_dir,
                            const std::string& out_dir);

}  // namespace pw::rt::migration
