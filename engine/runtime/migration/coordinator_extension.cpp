#include "runtime/migration/coordinator_extension.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "core/io/checked_write.h"
#include "runtime/coordinator.h"
#include "runtime/migration/keys.h"

namespace pw::rt::migration {

void MigrationExtension::on_store(const PreparedJob& job, c10::intrusive_ptr<c10d::Store> store,
                                  RunObserver* observer) {
  store_ = store;
  controller_ = std::make_unique<Controller>(job, std::move(store), observer);
  controller_->publish();
}

void MigrationExtension::add_abilities(RunCommands::Abilities& a) { a.rebalances = controller_->enabled(); }

void MigrationExtension::on_start(std::int64_t start_iteration) { controller_->start_at(start_iteration); }

void MigrationExtension::poll() {
  if (controller_) controller_->poll();
}

bool MigrationExtension::busy() const { return controller_ && controller_->busy(); }

std::string MigrationExtension::failure_context() { return controller_ ? controller_->failure_context() : ""; }

bool MigrationExtension::take_command(RunCommand command, std::string& refusal) {
  if (command != RunCommand::Rebalance) return false;
  if (!controller_ || !controller_->enabled()) refusal = "online replanning is off for this job (runtime.replan in the job)";
  else store_->add(keys::kRebalance, 1);
  return true;
}

// The events without a measured gain yet, the final plan, migration.json.
void MigrationExtension::after_workers(RunResult& result, const std::string& run_dir) {
  if (!controller_ || !controller_->enabled()) return;
  if (result.exit_code == 0) {
    try {
      controller_->poll();  // the last iterations' measurements
    } catch (const std::exception&) {
    }
  }
  controller_->finish();
  result.plan = controller_->plan();
  if (!run_dir.empty())
    write_file_atomically(run_dir + "/migration.json", controller_->report().dump(2) + "\n", "migration report");
}

}  // namespace pw::rt::migration
