#pragma once
#include <string>

#include "core/spec/job_spec.h"

namespace pw {

// cluster.messaging: "tagged" (default) or "ordered" (docs/jobs.md), which
// parse_job has validated. Read from the job's document rather than kept in
// ClusterSpec, so that adding it left job_spec.h (included nearly
// everywhere) as it was; a job built in code without a document is tagged.
std::string cluster_messaging(const JobSpec& job);

}  // namespace pw
