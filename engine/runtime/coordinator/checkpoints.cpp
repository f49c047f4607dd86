// Checkpoints: where a resumed run starts, and the index of the newest
// checkpoint every stage completed.
#include "runtime/coordinator/coordinator_impl.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/spec/spec_error.h"
#include "core/io/checked_write.h"
#include "runtime/iteration_agreement.h"
#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {

// Where a resumed run starts: the newest checkpoint every stage completed,
// with the partition it was saved under (a live migration may have
// changed it from the job's plan).
nlohmann::json Coordinator::read_resume_point(PreparedJob& prepared) {
  namespace fs = std::filesystem;
  std::ifstream in(opt_.resume_dir + "/checkpoint/meta.json");
  if (!in) throw std::runtime_error(opt_.resume_dir + ": no checkpoint (checkpoint/meta.json) to resume from");
  auto meta = nlohmann::json::parse(in);
  std::string dir = opt_.resume_dir + "/" + meta.value("dir", std::string("checkpoint"));
  if (!opt_.plan && fs::exists(dir + "/plan.json")) {
    Plan saved = plan_from_json(nlohmann::json::parse(std::ifstream(dir + "/plan.json")));
    validate_plan(saved, prepared.profile.size());
    if (static_cast<int>(saved.stages.size()) != prepared.schedule->virtual_stages())
      throw SpecError("pipeline.schedule", "the checkpoint's partition has " + std::to_string(saved.stages.size()) +
                                               " stages, this schedule runs " +
                                               std::to_string(prepared.schedule->virtual_stages()) +
                                               "; a resume cannot change the layout of the stages");
    prepared.plan = saved;
  }
  return {{"iteration", meta.at("iteration")}, {"dir", dir}};
}

// A checkpoint is complete when every stage has saved it; meta.json then
// points at it (written atomically) and older ones are removed.
void Coordinator::note_checkpoints() {
  std::int64_t complete = std::numeric_limits<std::int64_t>::max();
  for (int r = 0; r < world_; ++r) complete = std::min(complete, read_counter(*store_, keys::checkpoint_saved(r)));
  if (complete <= last_checkpoint_) return;
  namespace fs = std::filesystem;
  fs::path root = fs::path(opt_.run_dir) / "checkpoint";
  write_file_atomically((root / "meta.json").string(),
                        nlohmann::json{{"iteration", complete}, {"dir", "checkpoint/" + std::to_string(complete)}}.dump() + "\n",
                        "checkpoint index");
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (d.is_directory() && !name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(name) < complete)
      fs::remove_all(d.path(), ec);
  }
  last_checkpoint_ = complete;
  if (obs_) obs_->on_checkpoint(complete);
}

}  // namespace pw::rt::coordinator_impl
