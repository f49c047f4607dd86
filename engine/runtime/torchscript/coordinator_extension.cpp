#include "runtime/torchscript/coordinator_extension.h"

#include <stdexcept>

#include "runtime/coordinator.h"
#include "runtime/torchscript/torchscript_model.h"

namespace pw::rt {

void TorchScriptExtension::before_planning(JobSpec& job, const std::string& run_dir) {
  ensure_torchscript_profile(job, run_dir);  // measured: a user's model has no analytic costs
}

void TorchScriptExtension::on_results(const JobSpec& job, RunResult& result, int stages, const std::string& run_dir) {
  if (job.model.kind != "torchscript") return;
  try {
    export_trained_torchscript(job, result.plan, stages, run_dir + "/weights", run_dir + "/model.pt");
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("saving the trained TorchScript model: ") + e.what());
  }
}

}  // namespace pw::rt
