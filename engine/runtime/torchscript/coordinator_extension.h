#pragma once
#include "runtime/coordinator_extension.h"

namespace pw::rt {

// User TorchScript models in the coordinator (docs/torchscript.md): a job
// without a profile is measured before planning, and the trained weights
// go back as TorchScript (run_dir/model.pt).
class TorchScriptExtension final : public CoordinatorExtension {
 public:
  void before_planning(JobSpec& job, const std::string& run_dir) override;
  void on_results(const JobSpec& job, RunResult& result, int stages, const std::string& run_dir) override;
};

}  // namespace pw::rt
