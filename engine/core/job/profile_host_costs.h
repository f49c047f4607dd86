#pragma once
#include <optional>
#include <string>

#include "core/model/layer_profile.h"
#include "core/spec/job_spec.h"

namespace pw {

// The job planning with the host costs its profile carries (a profile
// calibrated by `profile --in-situ`): cluster.send_cpu_us / send_cpu_gbps
// and cluster.action_overhead_us are taken from the profile wherever the
// job's own document does not set them (a job field, or --set, wins), in
// the parsed fields and in the document (what suggestions and workers
// re-read). Host costs measured on another device than the job's are not
// taken: a note in the profile's assumptions says so.
void apply_profile_host_costs(JobSpec& job, ModelProfile& profile);

// Whether the job plans with any host cost at all (its own fields or its
// profile's, once applied).
bool has_host_costs(const JobSpec& job);

// The note `plan`, `simulate` and `explain` print when a measured profile
// without host costs chooses a microbatch size or gives advice: per-action
// host time grows as microbatches shrink, so a choice made without it
// favours small ones. Empty when there is nothing to say.
std::optional<std::string> missing_host_costs_note(const JobSpec& job, const ModelProfile& profile);

}  // namespace pw
