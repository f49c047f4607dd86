#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/runtime/run_args.h"
#include "core/io/run_dir_lock.h"
#include "core/nas/nas_job.h"
#include "core/spec/job_spec.h"
#include "runtime/nas/csp_launch.h"

namespace pw::cli {

// What `run` of a supernet job checked before anything is written or
// started: the prepared job, the checkpoint a resume continues from, and
// the locks on the directories it reads and writes (held to the end).
struct CheckedSupernetRun {
  nas::NasJob nas;
  std::optional<rt::nas::CspResumePoint> resume;
  std::vector<std::shared_ptr<RunDirLock>> locks;
};

// The supernet run's validator: options it cannot honour (UsageError), a
// search space or budget no subnet fits, a resume that cannot continue
// (SpecError naming the field, CheckpointRefused naming the file), a
// schedule real training does not run. A refusal changes nothing on disk,
// as the pipeline run's does.
CheckedSupernetRun check_supernet_run(const JobSpec& job, const RunArgs& args, const Args& given);

}  // namespace pw::cli
