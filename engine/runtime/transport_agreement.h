#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

#include "core/cluster/transport_choice.h"

namespace pw::rt {

// What this process sees: its host's name, its LOCAL_RANK, the CUDA
// devices visible to it (0 with a CPU-only libtorch).
StageSite local_stage_site(int local_rank);

// Every worker of a run publishes its StageSite in the store and decides
// from all of them: the same list gives every rank the same backend, so
// no two ranks build different process groups. Blocks until all `world`
// sites are published (the store's timeout). Throws SpecError naming
// cluster.backend for a backend the cluster cannot run.
TransportChoice agree_transport(c10d::Store& store, int rank, int world, int local_rank, const std::string& requested);

// The decision for a run whose workers the coordinator starts on this host
// (stage r gets LOCAL_RANK r), made before any starts: a refused backend is
// a job error (exit 2) before the run directory is written.
TransportChoice local_transport(const std::string& requested, int stages);

}  // namespace pw::rt
