#include "runtime/migration/repartition.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <filesystem>
#include <map>

#include "core/schedule/schedule.h"
#include "runtime/data.h"
#include "runtime/migration/layer_state.h"
#include "runtime/stage.h"

namespace pw::rt::migration {

void repartition_checkpoint(const JobSpec& job, const Plan& from, const Plan& to, const std::string& in_dir,
                            const std::string& out_dir) {
  auto sched = make_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches, job.pipeline.chunks);
  TrainData data(job);
  std::map<int, std::string> blobs;
  int devices = sched->devices();
  // A StageExecutor without a process group: only its layers and optimizer are used.
  for (int d = 0; d < devices; ++d) {
    StageExecutor old(job, from, *sched, d, {}, data);
    old.load(in_dir + "/stage" + std::to_string(d) + ".pt");
    for (int l = 0; l < from.layer_count(); ++l)
      if (old.layer(l)) blobs[l] = export_layer(old, l);  // the schedule's placement says whose it is
  }
  std::filesystem::create_directories(out_dir);
  for (int d = 0; d < devices; ++d) {
    StageExecutor next(job, to, *sched, d, {}, data);
    for (int l = 0; l < to.layer_count(); ++l)
      if (next.layer(l)) import_layer(next, l, blobs.at(l), job.training.optimizer);
    next.save(out_dir + "/stage" + std::to_string(d) + ".pt");
  }
}

}  // namespace pw::rt::migration
