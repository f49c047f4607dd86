#pragma once
#include <vector>

#include "core/model/layer_profile.h"

namespace pw {

// PipeDream's hybrid optimizer (optimizer_graph_hierarchical.py, one level:
// a flat cluster with one bandwidth), which replicates single stages: a
// dynamic programme over (state, workers) where a stage holding layers C
// with parameters P on r workers takes (C + 4 (r - 1) P / (r bw)) / r
// (round-robin microbatches over its replicas, plus their weight
// all-reduce as PipeDream models it), and a pipeline takes its slowest
// stage or transfer. docs/planners.md, "PipeDream's replication".

// The states a pipeline may cut at, in an order where every state comes
// after those inside it. State i is a set of layers closed under producers;
// a stage is the difference of two nested states. The last state holds
// every layer.
struct HybridStates {
  std::vector<double> compute_ms;   // forward + backward of the state's layers
  std::vector<double> param_bytes;  // parameters of the state's layers
  std::vector<double> out_bytes;    // activations leaving the state to the rest
  std::vector<std::vector<int>> inside;  // every state strictly inside state i
  int size() const { return static_cast<int>(compute_ms.size()); }
};

// The prefixes of a profile's layer order (a straight pipeline's cuts):
// state i = layers 0..i, out_bytes its boundary_bytes.
HybridStates prefix_states(const ModelProfile& profile);

struct HybridOptions {
  int workers = 1;
  double bandwidth_gbps = 0;  // > 0; gigabits per second, as DeviceSpec::link_gbps
  // Count activation transfers (PipeDream's --activation_compression_ratio
  // 1): every stage but the first takes at least 2 x its input and output
  // bytes / (bandwidth x its replicas). false: compute and all-reduce only
  // (PipeDream's default).
  bool transfers = true;
  // 0: any number of stages (PipeDream); else exactly this many.
  int stages = 0;
};

struct HybridStage {
  int from_state = -1;  // exclusive; -1 = from the first layer
  int to_state = 0;     // inclusive
  int replicas = 1;
  double compute_ms = 0, param_bytes = 0;
  double time_ms = 0;   // hybrid_stage_ms
};

struct HybridPlan {
  bool feasible = false;  // false when `stages` cannot be met (more than workers or states)
  double pipeline_ms = 0;  // the slowest stage or transfer (PipeDream's "time per stage in pipeline")
  std::vector<HybridStage> stages;  // first to last; replicas sum to workers
};

// One stage's time on `replicas` workers (PipeDream's formula).
double hybrid_stage_ms(double compute_ms, double param_bytes, int replicas, double bandwidth_gbps);

// PipeDream's recurrence: A[j][m] = min(j as one stage on m workers,
// min over states k inside j and m' < m of max(A[k][m - m'], the stage
// j \ k on m' workers, its transfers)). Every worker is used, as PipeDream
// without --use_fewer_machines. Ties keep the first found (k ascending,
// m' ascending); PipeDream's order among ties is a Python set's.
// Throws std::invalid_argument naming the option for workers < 1,
// bandwidth <= 0 or stages < 0, and for states that are empty.
HybridPlan pipedream_hybrid(const HybridStates& states, const HybridOptions& options);

}  // namespace pw
