#pragma once
#include <vector>

#include "core/model/layer_profile.h"

namespace pw {

// One profile from profiles of the same model measured at several
// microbatch sizes (`pipewright profile --microbatch-sizes`): every layer
// gets a by_microbatch row per size; everything else (bytes, optimizer,
// the times themselves) is the profile measured at `base_microbatch`, which
// must be among them. Throws std::invalid_argument when the profiles do not
// describe the same layers or sizes repeat.
ModelProfile merge_microbatch_profiles(const std::vector<ModelProfile>& measured, int base_microbatch);

}  // namespace pw
