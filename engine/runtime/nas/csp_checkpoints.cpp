#include "runtime/nas/csp_checkpoints.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include "core/io/checkpoint_index.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "runtime/nas/csp_trainer.h"

namespace pw::rt::nas {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The checkpoint directories under root whose every stage wrote its part
// (stage<r>.json is written last), newest first.
std::vector<int> complete_checkpoints(const std::filesystem::path& root, int workers) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (!d.is_directory() || !all_digits(name) || name.size() > 9) continue;
    bool complete = true;
    for (int r = 0; r < workers && complete; ++r)
      complete = std::filesystem::exists(checkpoint_meta_file(d.path().string(), r));
    if (complete) out.push_back(std::stoi(name));
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

// The files of a complete checkpoint, as its index lists them: each
// stage's state and its part (the part written last).
std::vector<std::string> checkpoint_files(int workers) {
  std::vector<std::string> files;
  for (int r = 0; r < workers; ++r)
    for (const std::string& f : {checkpoint_state_file("", r), checkpoint_meta_file("", r)}) files.push_back(f.substr(1));
  return files;
}

}  // namespace

bool is_checkpoint_name(const std::string& name) { return all_digits(name) && name.size() <= 9; }

// As the pipeline coordinator's note_checkpoints: the newest checkpoint
// every stage completed becomes meta.json's (atomic rename), and older
// ones go. A stage never writes into a checkpoint the others have not
// completed (they drain to it together), so nothing removed is in use.
// Returns the error instead of throwing: the launcher must still end and
// reap its workers (a full disk fails the run naming the file).
std::string note_csp_checkpoints(const std::string& out_dir, int workers, int* last) try {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(out_dir) / "checkpoint";
  auto done = complete_checkpoints(root, workers);
  if (done.empty() || done.front() <= *last) return {};
  const int k = done.front();
  write_checkpoint_index(out_dir, "subnet", k, checkpoint_files(workers));
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const std::string name = d.path().filename().string();
    if (d.is_directory() && all_digits(name) && name.size() <= 9 && std::stoi(name) < k) fs::remove_all(d.path(), ec);
  }
  *last = k;
  return {};
} catch (const std::exception& e) {
  return e.what();
}

CspResumePoint read_csp_resume_point(const std::string& run_dir, int workers) {
  // The index and every file it lists checked first (sizes and digests,
  // the directory inside run_dir: core/io/checkpoint_index.h); then each
  // stage's part, field by field, so a message names its file.
  const CheckpointIndex index = read_checkpoint_index(run_dir, "subnet", checkpoint_files(workers));
  CspResumePoint p;
  if (index.position > INT_MAX) throw CheckpointRefused(index.index_file + ": \"subnet\" is beyond any run");
  p.subnet = static_cast<int>(index.position);
  p.dir = index.dir;
  for (int r = 0; r < workers; ++r) {
    const std::string part = checkpoint_meta_file(p.dir, r);
    nlohmann::json j;
    try {
      j = parse_bounded_json(read_bounded_file(part, 64u << 20, "checkpoint part"));
    } catch (const SpecError& e) {
      throw CheckpointRefused(part + ": " + e.path() + ": " + e.reason());
    }
    auto integer = [&](const char* key) {
      if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
          (j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() > INT64_MAX : j[key].get<std::int64_t>() < 0))
        throw CheckpointRefused(part + ": \"" + key + "\" is missing or not a non-negative integer");
      return j[key].get<std::int64_t>();
    };
    for (const char* key : {"first_layer", "last_layer"})
      if (integer(key) > INT_MAX) throw CheckpointRefused(part + ": \"" + key + "\" is beyond any search space");
    integer("records_bytes");
    integer("record_ns");
    // What the stage's trainer reads besides (CspStageTrainer::restore).
    auto all_of = [&](const char* key, auto is) {
      const bool ok = j.contains(key) && j[key].is_array() && std::all_of(j[key].begin(), j[key].end(), is);
      if (!ok) throw CheckpointRefused(part + ": \"" + key + "\" is missing or not an array of numbers");
    };
    all_of("steps", [](const nlohmann::json& v) { return v.is_number_integer(); });
    // A diverged subnet's loss is NaN, which JSON writes as null.
    if (j.contains("losses")) all_of("losses", [](const nlohmann::json& v) { return v.is_number() || v.is_null(); });
    if (integer("subnet") != p.subnet)
      throw CheckpointRefused(part + ": subnet " + std::to_string(integer("subnet")) + ", " + index.index_file +
                              " says " + std::to_string(p.subnet));
    p.stages.push_back(std::move(j));
  }
  return p;
}

}  // namespace pw::rt::nas
