#pragma once
#include <string>
#include <vector>

#include "core/io/checked_write.h"
#include "core/spec/job_spec.h"

namespace pw::cli {

// The files a command reads for a job: the job file, the measured profile
// (model.profile or --profile), a TorchScript model, a supernet's subnet
// list. Its outputs never replace one (OutputTarget::inputs).
std::vector<InputFile> job_inputs(const std::string& job_file, const JobSpec& job);

}  // namespace pw::cli
