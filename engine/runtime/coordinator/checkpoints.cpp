// Checkpoints: where a resumed run starts, and the index of the newest
// checkpoint every stage completed.
#include "runtime/coordinator/coordinator_impl.h"

#include <filesystem>
#include <limits>

#include "core/io/checkpoint_index.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "runtime/iteration_agreement.h"
#include "runtime/protocol.h"

namespace pw::rt::coordinator_impl {
namespace {

// What every complete checkpoint holds: a state file per stage process (a
// split stage's: one per tensor rank, its shard) and stage 0's plan.json
// (the partition the files follow).
std::vector<std::string> checkpoint_files(const JobSpec& job) {
  std::vector<std::string> files{"plan.json"};
  for (int r = 0; r < job.pipeline.stages; ++r)
    for (int k = 0; k < std::max(1, job.parallel.tensor); ++k) files.push_back(WorkerRole::state_file_of(r, k));
  return files;
}

}  // namespace

// The checkpoint a resume continues, checked whole before anything of the
// run is touched or started: the index's position and directory, every
// file's size and digest (core/io/checkpoint_index.h), and a position this
// job still has iterations after.
void Coordinator::check_resume_point() {
  // Each tensor rank's file holds its shard of the stage: a resume keeps the split.
  if (const std::string saved_job = opt_.resume_dir + "/job.json"; std::filesystem::exists(saved_job)) {
    const int saved = load_job(saved_job).parallel.tensor, now = opt_.job.parallel.tensor;
    if (saved != now)
      throw SpecError("parallel.tensor", "differs from the checkpoint's " + std::to_string(saved) + " (now " +
                                             std::to_string(now) + "); a resume cannot change the tensor split "
                                             "(each tensor rank's checkpoint file holds its shard)");
  }
  // Attached workers on other hosts save, and load, their files there.
  resume_point_ = read_checkpoint_index(opt_.resume_dir, "iteration", checkpoint_files(opt_.job),
                                        opt_.attach);
  const std::int64_t at = resume_point_->position, total = opt_.job.training.iterations;
  if (at >= total)
    throw SpecError("training.iterations", std::to_string(total) + " iterations, the checkpoint " + resume_point_->dir +
                                               " is at iteration " + std::to_string(at) +
                                               ": nothing left to train (raise training.iterations)");
}

// Where a resumed run starts: the checked checkpoint, with the partition it
// was saved under (a live migration may have changed it from the job's plan).
nlohmann::json Coordinator::read_resume_point(PreparedJob& prepared) {
  const std::string& dir = resume_point_->dir;
  const std::string plan_file = dir + "/plan.json";
  if (!opt_.plan) {
    Plan saved;
    try {
      saved = plan_from_json(parse_bounded_json(read_bounded_file(plan_file, 64u << 20, "checkpoint plan")));
    } catch (const SpecError& e) {
      throw CheckpointRefused(plan_file + ": " + e.path() + ": " + e.reason());
    } catch (const std::exception&) {
      throw CheckpointRefused(plan_file + ": not a plan this engine wrote");
    }
    validate_plan(saved, prepared.profile.size());
    if (static_cast<int>(saved.stages.size()) != prepared.schedule->virtual_stages())
      throw SpecError("pipeline.schedule", "the checkpoint's partition has " + std::to_string(saved.stages.size()) +
                                               " stages, this schedule runs " +
                                               std::to_string(prepared.schedule->virtual_stages()) +
                                               "; a resume cannot change the layout of the stages");
    prepared.plan = saved;
  }
  return {{"iteration", resume_point_->position}, {"dir", dir}};
}

// A checkpoint is complete when every stage has saved it; meta.json then
// points at it with each file's size and digest (written atomically) and
// older ones are removed.
void Coordinator::note_checkpoints() {
  std::int64_t complete = std::numeric_limits<std::int64_t>::max();
  for (int r = 0; r < world_; ++r) complete = std::min(complete, read_counter(*store_, keys::checkpoint_saved(r)));
  if (complete <= last_checkpoint_) return;
  namespace fs = std::filesystem;
  fs::path root = fs::path(opt_.run_dir) / "checkpoint";
  write_checkpoint_index(opt_.run_dir, "iteration", complete, checkpoint_files(opt_.job),
                         opt_.attach);
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (d.is_directory() && !name.empty() && name.size() <= 18 &&
        name.find_first_not_of("0123456789") == std::string::npos && std::stoll(name) < complete)
      fs::remove_all(d.path(), ec);
  }
  last_checkpoint_ = complete;
  if (obs_) obs_->on_checkpoint(complete);
}

}  // namespace pw::rt::coordinator_impl
