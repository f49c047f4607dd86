// The run's result: the stages' reports, what the extensions make of them, result.json.
#include "runtime/coordinator/coordinator_impl.h"

#include "core/io/checked_write.h"
#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

void Coordinator::collect(const JobSpec& job) {
  for (int r = 0; r < world_; ++r) {
    auto j = nlohmann::json::parse(from_bytes(store_->get(keys::result(r))));
    if (j.contains("accuracy")) result_.accuracy = j["accuracy"].get<double>();
    result_.stages.push_back(j);
  }
  if (opt_.run_dir.empty()) return;
  for (auto& e : extensions_) try {
      e->on_results(job, result_, job.pipeline.stages, opt_.run_dir);  // weights/stage<s>.pt: one per stage
    } catch (const std::exception& x) {
      fail(1, x.what());
    }
  if (obs_) stream_events();  // the rest
  try {
    note_checkpoints();
  } catch (const std::exception& e) {
    fail(1, e.what());
  }
  nlohmann::json out{{"job", job.name},
                     {"stopped", result_.stopped},
                     {"losses", result_.losses},
                     {"start_iteration", result_.start_iteration},
                     {"samples_per_s", result_.samples_per_s},
                     {"iteration_ms", result_.iteration_ms},
                     {"stages", result_.stages}};
  if (result_.accuracy >= 0) out["accuracy"] = result_.accuracy;
  try {
    write_file_atomically(opt_.run_dir + "/result.json", out.dump(2) + "\n", "result");
  } catch (const std::exception& e) {
    fail(1, e.what());
  }
}

}  // namespace pw::rt::coordinator_impl
