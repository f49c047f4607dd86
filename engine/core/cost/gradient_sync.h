#pragma once
#include <cstdint>
#include <vector>

#include "core/cluster/topology.h"
#include "core/model/layer_profile.h"
#include "core/layout/plan_layout.h"

namespace pw {

// Data parallelism as the cost model sees it: how many replicas of the
// pipeline train at once, where they sit, and the size of the buckets
// their gradients are all-reduced in (ParallelSpec; docs/simulator.md,
// "Gradient synchronisation").
struct GradientSync {
  int replicas = 1;
  // Devices of a stage's tensor group (parallel.tensor): a stage's
  // replicas of one tensor rank lie `tensor` devices apart (topology.h).
  int tensor = 1;
  std::uint64_t bucket_bytes = 25ull << 20;
  // Links per topology; without one (a hand-made SimInput) every transfer
  // takes the device's own link, as before there were replicas.
  bool has_topology = false;
  Topology topology;
  bool enabled() const { return replicas > 1; }
};

// One bucket of a stage's gradients, all-reduced over the stage's replicas.
struct SyncBucket {
  int first_layer = 0, last_layer = -1;  // the layers whose gradients it carries
  std::uint64_t bytes = 0;
  double ms = 0;  // its ring all-reduce
  // Its gradients are complete this long before the stage's last backward
  // of the iteration ends: that backward computes the layers in reverse
  // order, and the bucket waits only for its own first layer (the later
  // ones' time, weight gradients alone for a split backward's W).
  double ready_before_end_ms = 0;
};

// The buckets of the virtual stage holding `range` on pipeline device
// `device`, in the order they become ready: from the last layer back, a
// bucket closed once it holds bucket_bytes (PyTorch DDP's rule; layers
// without parameters join the next bucket). Empty when the sync is off or
// the stage has no parameters. `split_backward`: W, not the full backward,
// completes the gradients.
// `device_link`: the device's own link, taken where the sync has no topology.
std::vector<SyncBucket> sync_buckets(const ModelProfile& profile, const StageRange& range, const GradientSync& sync,
                                     int device, bool split_backward, const LinkSpeed& device_link);

// The link a pipeline device's replicas all-reduce over, and the one
// between pipeline devices a and b (the slowest over the replicas); the
// device's own link where the sync has no topology.
LinkSpeed replica_group_link(const GradientSync& sync, int device, const LinkSpeed& device_link);
LinkSpeed pipeline_link(const GradientSync& sync, int a, int b, const LinkSpeed& device_link);

}  // namespace pw
