#include "core/job/resume_check.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/nas/search_space_fields.h"
#include "core/spec/model_fields.h"
#include "core/spec/spec_error.h"

namespace pw {
namespace {

template <class T>
void same(const std::string& path, const T& saved, const T& now, const std::string& what) {
  if (saved == now) return;
  throw SpecError(path, "differs from the checkpoint's " + nlohmann::json(saved).dump() + " (now " +
                            nlohmann::json(now).dump() + "); a resume cannot change " + what);
}

bool may_change_on_resume(const std::string& key) {
  for (const auto& r : nas::search_space_fields())
    if (r.scope == nas::SpaceScope::Space && r.key == key) return r.resume_may_change;
  return false;  // a key the parser refuses: compared like the supernet's
}

}  // namespace

void check_resume_compatible(const JobSpec& checkpoint, const JobSpec& resumed) {
  // The model's fields that shape the checkpoint's weights, from the one
  // table the parser reads them by (model_fields.h); a key another kind
  // writes for the same member (channels / widths) is named as this kind's.
  for (const auto& row : model_fields()) {
    if (!row.shapes_weights || !row.applies_to(checkpoint.model.kind)) continue;
    const nlohmann::json saved = row.value(checkpoint.model), now = row.value(resumed.model);
    if (saved != now)
      throw SpecError(std::string(row.path), "differs from the checkpoint's " + saved.dump() + " (now " + now.dump() +
                                                 "); a resume cannot change the model");
  }
  // One checkpoint file per stage process, laid out by the chunks per device.
  same("pipeline.stages", checkpoint.pipeline.stages, resumed.pipeline.stages, "the stage count");
  same("pipeline.chunks", checkpoint.pipeline.chunks, resumed.pipeline.chunks, "the chunks per device");
  // The optimizer's state (Adam's moments, momentum) is in the checkpoint.
  same("training.optimizer", checkpoint.training.optimizer, resumed.training.optimizer, "the optimizer");
  // A supernet job (docs/nas.md): the search space and the seed make its
  // candidates (initialised from (seed, layer, choice)), the subnet sequence
  // and the partition; a checkpoint holds that supernet at a point of that
  // sequence. What may change (the window only orders the work, `search`
  // runs after training) is the bounds table's resume_may_change, not a
  // list of this file's.
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& a_space = checkpoint.raw.is_object() && checkpoint.raw.contains("search_space")
                                      ? checkpoint.raw["search_space"] : none;
  const nlohmann::json& b_space = resumed.raw.is_object() && resumed.raw.contains("search_space")
                                      ? resumed.raw["search_space"] : none;
  if (a_space.empty() && b_space.empty()) return;
  if (a_space.empty() != b_space.empty())
    throw SpecError("search_space", std::string(a_space.empty() ? "given, but the checkpoint's job has none"
                                                                : "missing, but the checkpoint's job is a supernet") +
                                        "; a resume cannot change the model");
  std::set<std::string> keys;
  for (const auto& [k, v] : a_space.items()) keys.insert(k);
  for (const auto& [k, v] : b_space.items()) keys.insert(k);
  for (const auto& k : keys) {
    if (may_change_on_resume(k)) continue;
    const nlohmann::json a = a_space.value(k, nlohmann::json()), b = b_space.value(k, nlohmann::json());
    if (a != b)
      throw SpecError("search_space." + k, "differs from the checkpoint's " + a.dump() + " (now " + b.dump() +
                                               "); a resume cannot change the supernet");
  }
  same("training.seed", checkpoint.training.seed, resumed.training.seed, "the supernet's initial weights and subnets");
}

void check_resume_compatible(const std::string& run_dir, const JobSpec& resumed) {
  const std::string file = run_dir + "/job.json";
  if (!std::filesystem::exists(file)) return;
  JobSpec saved;
  try {
    saved = load_job(file);
  } catch (const SpecError& e) {
    throw SpecError(e.path(), file + " (the job the checkpoint was saved under): " + e.reason());
  }
  check_resume_compatible(saved, resumed);
}

}  // namespace pw
