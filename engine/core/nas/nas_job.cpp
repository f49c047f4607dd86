#include "core/nas/nas_job.h"

#include "core/nas/supernet_partition.h"
#include "core/spec/spec_error.h"

namespace pw::nas {

NasJob prepare_nas_job(const JobSpec& job) {
  NasJob nj;
  nj.job = job;
  nj.space = parse_search_space(job);
  if (job.pipeline.stages > nj.space.size())
    throw SpecError("pipeline.stages", "must be <= the search space's choice layers (" +
                                           std::to_string(nj.space.size()) + "), got " +
                                           std::to_string(job.pipeline.stages));
  supernet_mode(job);  // validates the schedule
  nj.search = parse_evolution(job);
  nj.sequence = subnet_sequence(nj.space, job.training.seed, job.training.iterations);
  nj.stages = partition_supernet(nj.space, job.pipeline.stages);
  nj.budget_bytes = nj.space.device_budget_bytes > 0 ? nj.space.device_budget_bytes
                                                     : 0.5 * static_cast<double>(job.cluster.device.memory_bytes);
  if (nj.space.partition == "csp") nj.stages = refine_partition_for_csp(supernet_sim_input(nj, SupernetMode::Csp));
  return nj;
}

SupernetMode supernet_mode(const JobSpec& job) {
  switch (job.pipeline.schedule) {
    case ScheduleKind::CSP: return job.search_space.value("window", 32) == 1 ? SupernetMode::Sequential : SupernetMode::Csp;
    case ScheduleKind::GPipe: return SupernetMode::GPipe;
    case ScheduleKind::OneFOneB: return SupernetMode::VPipe;
    case ScheduleKind::PipeDream: return SupernetMode::PipeDream;
    case ScheduleKind::Interleaved:
    case ScheduleKind::ZBH1:
    case ScheduleKind::ZBH2:
    case ScheduleKind::ZBV:
    case ScheduleKind::DualPipeV:
    case ScheduleKind::VHalf:
    case ScheduleKind::VMin:
    case ScheduleKind::Generated: break;
  }
  throw SpecError("pipeline.schedule", "a supernet job runs csp, gpipe, 1f1b (VPipe-style) or pipedream, "
                                       "not " + to_string(job.pipeline.schedule));
}

SupernetSimInput supernet_sim_input(const NasJob& nj, SupernetMode mode) {
  SupernetSimInput in;
  in.space = &nj.space;
  in.sequence = &nj.sequence;
  in.stages = nj.stages;
  in.device = nj.job.cluster.device;
  in.mode = mode;
  in.microbatches = nj.job.pipeline.microbatches;
  in.window = nj.space.window;
  in.budget_bytes = nj.budget_bytes;
  return in;
}

}  // namespace pw::nas
