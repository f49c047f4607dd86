#pragma once
// Which pipeline stage and which replica of the pipeline (parallel.data) a
// worker process is, from its WORLD rank, and how it is named to the user.
// The rank layout is the core's placement rule (core/cluster/topology.h,
// device_of): rank = stage x replicas + replica, a stage's replicas on
// neighbouring ranks (docs/engine.md, "Data parallelism").
#include <string>

#include "core/cluster/topology.h"

namespace pw::rt {

struct WorkerRole {
  int stage = 0;
  int replica = 0;
  int replicas = 1;
  int rank() const { return device_of(stage, replica, replicas); }
  // "stage 1", or "stage 1 replica 0" where the pipeline is replicated.
  std::string name() const {
    return "stage " + std::to_string(stage) + (replicas > 1 ? " replica " + std::to_string(replica) : "");
  }
  // The worker's event file under run_dir/events: stage<s>.jsonl for replica
  // 0 (one pipeline's files keep their names), stage<s>.replica<r>.jsonl else.
  std::string events_file() const {
    return "stage" + std::to_string(stage) + (replica > 0 ? ".replica" + std::to_string(replica) : "") + ".jsonl";
  }
};

inline WorkerRole role_of_rank(int rank, int replicas) {
  const int d = replicas > 0 ? replicas : 1;
  return {rank / d, rank % d, d};
}

}  // namespace pw::rt
