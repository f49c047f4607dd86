#pragma once
#include "core/plan/planner.h"

namespace pw {

// PipeDream's stage time for layers [a, b] of a straight pipeline (no
// replication): max(forward + backward compute, 2 x input activation /
// bandwidth, 2 x output activation / bandwidth), as its optimizer
// (optimizer_graph_hierarchical.py with an activation compression ratio
// of 1) computes it. The factor 2 is the activation going forward plus its
// gradient coming back over the same link. bandwidth <= 0 ignores
// communication (PipeDream's default without a compression ratio).
double pipedream_stage_ms(const ModelProfile& profile, int a, int b, double link_gbps);

// PipeDream's partition: `stages` contiguous ranges minimising the slowest
// pipedream_stage_ms. `bottleneck_ms` receives that optimum.
std::vector<StageRange> pipedream_partition(const ModelProfile& profile, int stages, double link_gbps,
                                            double* bottleneck_ms = nullptr);

// PipeDream's planner: its partition, every activation kept (no recompute,
// no swap). Where that does not fit, the plan is infeasible, as PipeDream
// runs out of memory. Straight pipelines only (chunks = 1).
// Where cluster.devices leaves devices spare (more than stages x
// parallel.data, req.sync.topology.devices), each pipeline gets
// devices / data workers and PipeDream's hybrid optimizer
// (pipedream_hybrid.h) places them: the job's stage count, single stages
// replicated, Plan::replicas = each stage's workers x data. Otherwise the
// plan is the straight one above, unchanged.
class PipeDreamPlanner final : public Planner {
 public:
  std::string name() const override { return "pipedream"; }
  Plan plan(const PlanRequest& req) const override;
};

}  // namespace pw
