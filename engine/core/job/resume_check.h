#pragma once
#include <string>

#include "core/spec/job_spec.h"

namespace pw {

// A resume continues a checkpoint: the stages load their saved parameters
// and optimizer state, so everything that shapes them must be what the
// checkpoint was saved under. Throws SpecError naming the first field of
// `resumed` that differs from `checkpoint` ("model.channels: differs from
// the checkpoint's [8,16]; a resume cannot change the model"). What only
// steers training (iterations, learning rate, data, microbatches, schedule
// within the same stages) may change. A supernet job (one with a
// search_space) also keeps its search_space (except `window` and `search`)
// and training.seed: "search_space.kernels: differs from the checkpoint's ...".
void check_resume_compatible(const JobSpec& checkpoint, const JobSpec& resumed);

// The same against the job a run directory recorded (RUN_DIR/job.json). A
// directory without one (written by an older version) is not checked here;
// its checkpoint files are then the only check.
void check_resume_compatible(const std::string& run_dir, const JobSpec& resumed);

}  // namespace pw
