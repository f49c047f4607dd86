#pragma once
// Which pipeline stage, which replica of the pipeline (parallel.data) and
// which tensor rank of the stage (parallel.tensor) a worker process is, from
// its WORLD rank, and how it is named to the user. The rank layout is the
// core's placement rule (core/cluster/topology.h): rank = (stage x replicas
// + replica) x tensors + tensor rank, a stage's tensor ranks on neighbouring
// ranks (one node: they all-reduce inside every layer), then its replicas
// (docs/engine.md, "Data parallelism", "Tensor parallelism").
#include <string>

#include "core/cluster/topology.h"

namespace pw::rt {

struct WorkerRole {
  int stage = 0;
  int replica = 0;
  int replicas = 1;
  int tensor = 0;   // tensor rank k within the stage's group
  int tensors = 1;  // parallel.tensor
  int rank() const { return device_of(stage, replica, replicas) * tensors + tensor; }
  // "stage 1", "stage 1 replica 0" where the pipeline is replicated, with
  // " tensor 1" where the stage is split.
  std::string name() const {
    return "stage " + std::to_string(stage) + (replicas > 1 ? " replica " + std::to_string(replica) : "") +
           (tensors > 1 ? " tensor " + std::to_string(tensor) : "");
  }
  // The worker's event file under run_dir/events: stage<s>.jsonl for replica
  // 0 (one pipeline's files keep their names), stage<s>.replica<r>.jsonl else.
  // A split stage's tensor ranks run the same actions in lock-step (every
  // block all-reduces): tensor rank 0's events stand for the group, the
  // others record none (records_events).
  std::string events_file() const {
    return "stage" + std::to_string(stage) + (replica > 0 ? ".replica" + std::to_string(replica) : "") + ".jsonl";
  }
  bool records_events() const { return tensor == 0; }
  // The stage's state (checkpoint, final weights): stage<s>.pt, and for a
  // split stage each tensor rank's shard beside it, stage<s>.tensor<k>.pt
  // for k > 0 (tensor rank 0's file keeps the unsplit name).
  std::string state_file() const { return state_file_of(stage, tensor); }
  static std::string state_file_of(int stage, int tensor) {
    return "stage" + std::to_string(stage) + (tensor > 0 ? ".tensor" + std::to_string(tensor) : "") + ".pt";
  }
};

inline WorkerRole role_of_rank(int rank, int replicas, int tensors = 1) {
  const int d = replicas > 0 ? replicas : 1, t = tensors > 0 ? tensors : 1;
  const int device = rank / t;
  return {device / d, device % d, d, rank % t, t};
}

}  // namespace pw::rt
