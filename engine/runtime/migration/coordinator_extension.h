#pragma once
#include <memory>

#include "runtime/coordinator_extension.h"
#include "runtime/migration/controller.h"

namespace pw::rt::migration {

// Online replanning and live migration in the coordinator: the Controller
// made once the store is up, polled with the coordinator's loop, its report
// written at the end (run_dir/migration.json).
class MigrationExtension final : public CoordinatorExtension {
 public:
  void on_store(const PreparedJob& job, c10::intrusive_ptr<c10d::Store> store, RunObserver* observer) override;
  void add_abilities(RunCommands::Abilities& abilities) override;
  void on_start(std::int64_t start_iteration) override;
  void poll() override;
  bool busy() const override;
  std::string failure_context() override;
  bool take_command(RunCommand command, std::string& refusal) override;
  void after_workers(RunResult& result, const std::string& run_dir) override;

 private:
  std::unique_ptr<Controller> controller_;
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace pw::rt::migration
