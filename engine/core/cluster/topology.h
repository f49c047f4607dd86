#pragma once
#include <cstdint>
#include <string>

namespace pw {

// Where a job's devices sit and how they are linked, as the cost model of
// communication between them needs it.
//
// Placement rule (docs/jobs.md, "parallel"): devices are numbered node by
// node (node = device / gpus_per_node) and tensor rank k of pipeline stage
// s of replica r runs on device (s x replicas + r) x tensor + k: the
// tensor rank varies fastest, then the replica, then the stage, as in
// Megatron-LM's default rank order. A stage's tensor group (its all-reduces
// run on every layer, forward and backward) is t neighbouring devices, so
// it lies inside a node whenever t divides gpus_per_node (the job refuses
// anything else, naming parallel.tensor); a stage's replicas come next, so
// its gradient all-reduce stays inside a node whenever its replicas' groups
// fit in one, and the pipeline's activations, which are small beside the
// gradients, cross nodes. With tensor 1 this is stage x replicas + replica.
struct Topology {
  int gpus_per_node = 1;
  double link_gbps = 0;        // inside a node, per direction
  double link_latency_us = 0;
  double node_link_gbps = 0;   // between nodes, per device and direction
  double node_link_latency_us = 0;
  // cluster.devices; 0 where unknown (a hand-made topology). More than
  // stages x replicas leaves devices spare, which the pipedream planner
  // gives to single stages (core/plan/pipedream_planner.h).
  int devices = 0;
};

// The devices' defaults per preset: cluster.gpus_per_node, node_link_gbps
// and node_link_latency_us when the job leaves them out. `devices` is the
// job's count: CPU and custom clusters default to one node of them all.
struct NodeDefaults {
  int gpus_per_node = 1;
  double node_link_gbps = 0;
  double node_link_latency_us = 0;
};
NodeDefaults node_defaults(const std::string& preset, int devices, double link_gbps, double link_latency_us);

int device_of(int stage, int replica, int replicas, int tensor = 1, int tensor_rank = 0);

// Whether tensor-parallel groups of `tensor` neighbouring devices (aligned
// at multiples of tensor) each lie inside one node of gpus_per_node: t
// divides gpus_per_node, or every device of the job is in the one node.
bool tensor_group_fits(int tensor, int gpus_per_node, int devices);
int node_of(const Topology& t, int device);

// A link as a transfer's cost sees it.
struct LinkSpeed {
  double gbps = 0;
  double latency_us = 0;
  bool crosses_nodes = false;
};

// The slowest link a group of `count` consecutive devices from `first`
// crosses (a ring over them is as fast as its slowest hop).
LinkSpeed group_link(const Topology& t, int first_device, int count);

// Ring all-reduce of `bytes` over `group` members: each sends and receives
// 2 (g - 1) / g of the bytes over the ring's slowest link, in 2 (g - 1)
// steps of one latency each (reduce-scatter, then all-gather). The one
// collective cost of a replica group's gradients (cost/gradient_sync) and a
// tensor group's activations (model/tensor_parallel).
double ring_allreduce_ms(std::uint64_t bytes, int group, const LinkSpeed& link);

// The link between the devices of pipeline stages a and b under the
// placement rule (device_of): the slowest over the replicas, each replica's
// pipeline crossing its own; tensor ranks sit side by side, so rank 0's
// devices decide. The one rule the simulator and the planners' estimate
// price a cut by (cost/gradient_sync's pipeline_link).
LinkSpeed stages_link(const Topology& t, int a, int b, int replicas, int tensor = 1);
// The cut between stages s and s + 1.
inline LinkSpeed stage_cut_link(const Topology& t, int stage, int replicas, int tensor = 1) {
  return stages_link(t, stage, stage + 1, replicas, tensor);
}

}  // namespace pw
