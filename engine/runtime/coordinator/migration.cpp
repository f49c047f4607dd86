// The end of a run with online replanning (engine/runtime/migration).
#include "runtime/coordinator/coordinator_impl.h"

#include "runtime/checked_write.h"

namespace pw::rt::coordinator_impl {

// migration hook: the events without a measured gain yet, the final plan, migration.json.
void Coordinator::finish_migration() {
  if (!mig_->enabled()) return;
  if (result_.exit_code == 0) {
    try {
      mig_->poll();  // the last iterations' measurements
    } catch (const std::exception&) {
    }
  }
  mig_->finish();
  result_.plan = mig_->plan();
  if (!opt_.run_dir.empty()) try {
      write_file_atomically(opt_.run_dir + "/migration.json", mig_->report().dump(2) + "\n", "migration report");
    } catch (const std::exception& e) {
      fail(1, e.what());
    }
}

}  // namespace pw::rt::coordinator_impl
