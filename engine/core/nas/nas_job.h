#pragma once
#include <vector>

#include "core/nas/evolution.h"
#include "core/nas/search_space.h"
#include "core/nas/subnet.h"
#include "core/nas/supernet_sim.h"
#include "core/spec/job_spec.h"

namespace pw::nas {

// A supernet job made ready to run: its space, the subnet sequence in data
// order (training.iterations subnets from the sampler and the seed), the
// stage partition and the per-stage candidate budget.
struct NasJob {
  JobSpec job;
  SearchSpace space;
  std::vector<Subnet> sequence;
  std::vector<StageSlots> stages;
  double budget_bytes = 0;
  EvolutionConfig search;  // search_space.search
};

// Throws SpecError (naming the JSON path) for a bad search space or a
// schedule that cannot train a supernet.
NasJob prepare_nas_job(const JobSpec& job);

// pipeline.schedule of a supernet job: csp -> CSP, gpipe -> GPipe,
// 1f1b -> VPipe-style (1F1B, one subnet per flush, prefetch),
// pipedream -> PipeDream. (Sequential is csp with search_space.window 1.)
SupernetMode supernet_mode(const JobSpec& job);

SupernetSimInput supernet_sim_input(const NasJob& nj, SupernetMode mode);

}  // namespace pw::nas
