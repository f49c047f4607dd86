#pragma once
#include <map>
#include <vector>

#include "core/calibrate/stage_compute.h"
#include "core/model/microbatch_curve.h"
#include "core/model/layer_profile.h"

namespace pw {

// One stage's compute as the runs at several sizes measured it, with its
// affine fit (alpha: what a microbatch costs the stage whatever its size).
struct StageSizeFit {
  StageRange range;
  std::vector<SizedTime> fwd, bwd;  // measured per microbatch, one point per size
  AffineTime fwd_fit, bwd_fit;
};

// In-situ calibration from runs of one partition at several microbatch
// sizes (`by_size`: size -> measure_stage_compute of that run): every layer
// gets a by_microbatch row at each size of its table and each size run, and
// within each stage the rows are scaled so the stage's sum at a size run
// equals what the run measured (between run sizes the scale is
// interpolated, beyond them it is the nearest one's). The stage's own
// per-microbatch cost on a shared CPU thus reaches the planner as part of
// its layers' fixed cost, not as one scale factor for every size. The
// optimizer step is scaled as calibrate_profile does, from the largest
// size. Throws std::invalid_argument when the runs' partitions differ.
ModelProfile calibrate_profile_at_sizes(const ModelProfile& profile,
                                        const std::map<int, std::vector<MeasuredStageCompute>>& by_size,
                                        std::vector<StageSizeFit>* fits = nullptr);

}  // namespace pw
