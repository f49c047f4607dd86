#pragma once
#include <vector>

#include "core/plan/pipedream_hybrid.h"

namespace pw {

// PipeDream's hierarchical optimizer over several levels of a cluster
// (optimizer_graph_hierarchical.py with -n W1 W2 ... -b B1 B2 ...): level 1
// is W1 workers joined by B1 (one machine), level 2 is W2 such machines
// joined by B2, and so on. Each level runs the one-level recurrence
// (pipedream_hybrid.h) on every layer range, and the level above takes a
// range's time on one whole machine of the level below as its compute; a
// stage replicated over r machines adds 4 (r - 1) P / (r B) of all-reduce
// (divided by the workers per machine where the whole range is one stage,
// as PipeDream does). Chains only (prefix_states): PipeDream indexes a
// level's ranges by its states' topological order, which for a branching
// graph it takes from the order a Python set iterates.
struct HybridLevel {
  int workers = 1;            // per unit of the level above (level 1: workers per machine)
  double bandwidth_gbps = 0;  // between this level's units
};

struct HierarchyStage {
  int from_state = -1, to_state = 0;  // as HybridStage
  int replicas = 1;                   // units of this level
  double time_ms = 0;                 // its time as the recurrence counts it
  std::vector<HierarchyStage> inner;  // its split over one unit of the level below (none on level 1)
};

struct HierarchyPlan {
  double pipeline_ms = 0;
  std::vector<HierarchyStage> stages;  // the outermost level's
};

// `levels` innermost first, as PipeDream's -n and -b. Transfers as
// HybridOptions::transfers, on each level over its own bandwidth.
// Throws std::invalid_argument naming the problem for no levels, a level
// with workers < 1 or bandwidth <= 0, or states that are not a chain.
HierarchyPlan pipedream_hierarchy(const HybridStates& states, const std::vector<HybridLevel>& levels,
                                  bool transfers = true);

}  // namespace pw
