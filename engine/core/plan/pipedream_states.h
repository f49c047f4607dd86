#pragma once
#include <string>
#include <vector>

#include "core/model/pipedream_graph.h"
#include "core/plan/pipedream_hybrid.h"

namespace pw {

// The states PipeDream's optimizer cuts a graph at (its "antichain DAG",
// graph/graph.py), built as it builds them, so that the hybrid
// recurrence (pipedream_hybrid.h) runs on exactly its search space:
// - Input sources are dropped, then "__getitem__" sinks, as its main does;
// - from the first remaining source in file order, an antichain moves on by
//   replacing one node of its augmented form (the antichain plus the
//   producers whose outputs it still needs) by a consumer with no
//   descendant in it; states are the antichains reached;
// - a state's layers are its augmented antichain and all their producers,
//   its out_bytes the augmented antichain's activation sizes (which count
//   a producer whose consumers are all inside too: PipeDream's figure), and
//   `inside` its ancestors in the antichain DAG.
// For a graph with several sources (GNMT) this is a subset of all
// down-sets; for the single-source ResNets it is all of them.
struct PipeDreamStates {
  HybridStates states;
  std::vector<std::vector<std::string>> node_ids;  // per state, its layers' node ids, in file order
};

PipeDreamStates pipedream_states(const PipeDreamGraph& graph);

// Node ids of a hybrid stage (state `to` minus state `from`, -1 = none).
std::vector<std::string> stage_nodes(const PipeDreamStates& s, int from_state, int to_state);

}  // namespace pw
