#pragma once
#include <cstdint>
#include <vector>

#include "core/cost/stage_cost.h"

namespace pw {

// One layer as the memory policy solver sees it.
struct PolicyItem {
  std::uint64_t act = 0;  // activation bytes kept when the layer keeps them
  std::uint64_t in = 0;   // bytes kept instead when it recomputes
  double fwd_ms = 0;      // what a recompute costs
};

// One stage's policy problem: its layers, the stage's weight-side cost
// (static and parameter bytes; activations are filled in by the solver),
// what the schedule keeps in flight, the budget, and the host link.
struct PolicyProblem {
  StageCost base;
  int in_flight = 1;
  int weight_versions = 1;
  std::uint64_t budget = 0;
  std::uint64_t swap_cap = 0;      // swap bytes per microbatch the host link moves behind the forward
  double swap_ms_per_byte = 0;     // swap time the schedule cannot hide (GPipe), 0 when hidden
};

struct PolicySolution {
  bool fits = false;
  double cost_ms = 0;  // recompute + exposed swap per microbatch
  double recompute_ms = 0;
  std::uint64_t kept = 0, swap = 0, recompute_peak = 0, peak = 0;
};

// Cheapest per-layer policy whose peak_memory_bound fits the budget, with
// swap traffic within swap_cap. Two greedy starts (recompute only; swap
// the layers dearest to recompute first), each followed by local
// improvement (undo a recompute, turn it into a swap, exchange a recompute
// for a cheaper one) until nothing improves; the cheaper result wins.
// Writes one policy per item to `out`. When nothing fits, returns the
// least-memory policy found with fits = false.
PolicySolution solve_policy(const PolicyProblem& prob, const std::vector<PolicyItem>& items,
                            std::vector<MemoryPolicy>& out);

}  // namespace pw
