#pragma once
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <string>

#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "runtime/run_commands.h"

namespace c10d {
class Store;
}

namespace pw::rt {

class RunObserver;
struct RunResult;

// A feature that takes part in a run (live migration, TorchScript models)
// without the coordinator knowing it: run_job calls every registered
// extension at these points, in registration order (run_extensions.h).
// An exception from a call after the workers started fails the run with its
// message, as the coordinator's own errors do.
class CoordinatorExtension {
 public:
  virtual ~CoordinatorExtension() = default;
  // Before the job is planned (nothing written yet besides what this writes):
  // may complete the job, e.g. with a measured profile.
  virtual void before_planning(JobSpec& job, const std::string& run_dir) {}
  // The store is up and the workers are not started: publish what they need.
  // `job` and `observer` outlive the run.
  virtual void on_store(const PreparedJob& job, c10::intrusive_ptr<c10d::Store> store, RunObserver* observer) {}
  virtual void add_abilities(RunCommands::Abilities& abilities) {}
  // The first iteration the workers run (after a resume, the checkpoint's).
  virtual void on_start(std::int64_t start_iteration) {}
  // Every round of the coordinator's loop, after the stages' checks passed.
  virtual void poll() {}
  // True while the coordinator should poll fast.
  virtual bool busy() const { return false; }
  // Appended to the run's failure message.
  virtual std::string failure_context() { return ""; }
  // A command only a feature can carry out (Rebalance). Returns whether it
  // is this extension's; `refusal` set: it is, and cannot be done now.
  virtual bool take_command(RunCommand command, std::string& refusal) { return false; }
  // Every worker has ended (successfully or not; result.exit_code says).
  virtual void after_workers(RunResult& result, const std::string& run_dir) {}
  // The run succeeded, its stages' weights are in run_dir/weights.
  virtual void on_results(const JobSpec& job, RunResult& result, int stages, const std::string& run_dir) {}
};

}  // namespace pw::rt
