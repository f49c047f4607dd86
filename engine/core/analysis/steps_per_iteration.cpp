#include "core/analysis/steps_per_iteration.h"

#include "core/spec/job_spec.h"

namespace pw {

int optimizer_steps_per_iteration(ScheduleKind schedule, int microbatches) {
  return flushes(schedule) ? 1 : microbatches;
}

int optimizer_steps_per_iteration(const nlohmann::json& job_doc) {
  if (!job_doc.is_object()) return 1;
  try {
    const JobSpec job = parse_job(job_doc);
    return optimizer_steps_per_iteration(job.pipeline.schedule, job.pipeline.microbatches);
  } catch (const std::exception&) {
    return 1;
  }
}

}  // namespace pw
