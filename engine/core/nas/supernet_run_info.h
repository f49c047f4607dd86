#pragma once
#include <nlohmann/json.hpp>

#include "core/nas/nas_job.h"

namespace pw::nas {

// What a recorded supernet run says it is, in the shapes ordinary runs use,
// so replay, export and the studio read both alike:
// - the profile: one entry per candidate of every choice layer, named
//   "<layer>/<candidate label>", in the profile file format;
// - the plan: the stage partition over choice layers (planner "supernet",
//   every layer kept: candidates are loaded and evicted, not recomputed).
nlohmann::json supernet_profile_json(const NasJob& nj);
nlohmann::json supernet_plan_json(const NasJob& nj);

}  // namespace pw::nas
