#include "cli/job_inputs.h"

namespace pw::cli {

std::vector<InputFile> job_inputs(const std::string& job_file, const JobSpec& job) {
  std::vector<InputFile> in{{job_file, "the job file"}};
  if (!job.model.profile.empty()) in.push_back({job.model.profile, "the profile"});
  if (!job.model.path.empty()) in.push_back({job.model.path, "the TorchScript model"});
  if (job.search_space.is_object() && job.search_space.value("subnet_file", nlohmann::json()).is_string())
    in.push_back({job.search_space["subnet_file"].get<std::string>(), "the subnet list"});
  return in;
}

}  // namespace pw::cli
