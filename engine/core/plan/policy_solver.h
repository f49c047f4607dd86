#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cost/stage_cost.h"

namespace pw {

// One layer as the memory policy solver sees it.
struct PolicyItem {
  std::uint64_t act = 0;  // activation bytes kept when the layer keeps them
  std::uint64_t in = 0;   // bytes kept instead when it recomputes
  double fwd_ms = 0;      // what a recompute costs
  // W's stash (w_stash_bytes; 0 without a split backward): held on the
  // device from B to W, unless the layer is swapped, when it goes to the
  // host after B and comes back before W.
  std::uint64_t stash = 0;
};

// Where a stage's swap-ins cannot hide, per microbatch, counted from the
// schedule's order the way the simulator issues them: a backward's swap-in
// starts with the action before it (a forward, a W or another backward), so
// it hides behind that action's time; only a backward due first after a
// step or nothing waits for it in full; right after its own microbatch's
// forward it also waits for that forward's swap-out (twice the transfer).
struct SwapExposure {
  double twice = 0;      // backwards right after their own forward
  double full = 0;       // backwards whose swap-in is fully exposed
  double after_fwd = 0;  // backwards right after a forward (window fwd_ms)
  double after_w = 0;    // backwards right after a W (window w_ms)
  double after_b = 0;    // backwards right after a backward or B (window b_ms)
  // The same for the reload of W's stash before each W (split backward)
  // that does not follow its own B at once (that one keeps its stash).
  double stash_full = 0, stash_after_fwd = 0, stash_after_w = 0, stash_after_b = 0;
  double fwd_ms = 0, w_ms = 0, b_ms = 0;
  // Stall per microbatch for a swap-in of sw ms and a stash reload of
  // stash_sw ms.
  double stall_ms(double sw, double stash_sw = 0) const {
    auto late = [](double t, double window) { return t > window ? t - window : 0; };
    double ms = 0;
    if (sw > 0)
      ms += (2 * twice + full) * sw + after_fwd * late(sw, fwd_ms) + after_w * late(sw, w_ms) + after_b * late(sw, b_ms);
    if (stash_sw > 0)
      ms += stash_full * stash_sw + stash_after_fwd * late(stash_sw, fwd_ms) + stash_after_w * late(stash_sw, w_ms) +
            stash_after_b * late(stash_sw, b_ms);
    return ms;
  }
};

// One stage's policy problem: its layers, the stage's weight-side cost
// (static and parameter bytes; activations are filled in by the solver),
// what the schedule keeps in flight, the budget, and the host link.
struct PolicyProblem;
// W's stash a microbatch holds on the device from B to W: `stash`, the
// whole range's (every layer's, whatever its policy), less the swapped
// layers' (c.w_stash_swap_bytes_per_mb), which wait on the host.
inline std::uint64_t resident_stash(const StageCost& c, std::uint64_t stash) {
  return stash > c.w_stash_swap_bytes_per_mb ? stash - c.w_stash_swap_bytes_per_mb : 0;
}

// peak_memory_bound of `c` (whose kept_bytes_per_mb is the policy's kept
// bytes, w_stash_swap_bytes_per_mb its swapped layers' stash) under the
// problem's in-flight counts, with W's stash as above (kept_floor: the
// range's whole stash; the bound counts resident_stash of it).
// At any time n_fb microbatches hold kept (F to B) and n_bw the stash (B to
// W): n_fb kept + n_bw stash <= in_flight kept + w_lag (stash - kept)+, as
// n_fb + n_bw <= in_flight and n_bw <= w_lag (w_lag < 0: in_flight). The
// offloaded stash's transfers are peak_memory_bound's transient buffers.
inline std::uint64_t held_memory_bound(const StageCost& c, int in_flight, int weight_versions, std::uint64_t kept_floor,
                                       int w_lag) {
  const std::uint64_t bound = peak_memory_bound(c, in_flight, weight_versions);
  const std::uint64_t floor = resident_stash(c, kept_floor);
  if (floor <= c.kept_bytes_per_mb) return bound;
  const int n = w_lag < 0 || w_lag > in_flight ? in_flight : w_lag;
  return bound + static_cast<std::uint64_t>(n) * (floor - c.kept_bytes_per_mb);
}

// The activations a stage holds in flight at worst, what pipeline.memory_cap
// caps (core/schedule/memory_cap.h): what microbatches keep from F to B, W's
// stash held on the device beyond it from B to W (as held_memory_bound
// counts them), and of what goes to the host (activations after F, the
// swapped layers' stash after B), only what is back on the device: the
// reload of the action running and of the one after it, each the larger of
// the two.
inline std::uint64_t held_activation_bytes(const StageCost& c, int in_flight, std::uint64_t kept_floor, int w_lag) {
  const std::uint64_t reload = std::max(c.swap_bytes_per_mb, c.w_stash_swap_bytes_per_mb);
  std::uint64_t held = static_cast<std::uint64_t>(in_flight) * c.kept_bytes_per_mb + 2 * reload;
  const std::uint64_t floor = resident_stash(c, kept_floor);
  if (floor > c.kept_bytes_per_mb) {
    const int n = w_lag < 0 || w_lag > in_flight ? in_flight : w_lag;
    held += static_cast<std::uint64_t>(n) * (floor - c.kept_bytes_per_mb);
  }
  return held;
}

struct PolicyProblem {
  StageCost base;
  int in_flight = 1;
  int weight_versions = 1;
  // W's stash of the range, every layer's (a split backward; 0 otherwise):
  // a microbatch holds at least resident_stash of it, what its unswapped
  // layers stash; the bound counts max(kept, that) per microbatch.
  std::uint64_t kept_floor = 0;
  // Of the microbatches in flight, at most this many hold W's stash at once
  // (between their B and W, counted from the schedule's order): the bound
  // then counts kept per microbatch in flight plus, for these, what the
  // stash exceeds it by. < 0: unknown, max(kept, kept_floor) each.
  int w_lag = -1;
  std::uint64_t budget = 0;
  // pipeline.memory_cap as this stage's bytes (held_activation_bytes must
  // not exceed it); 0: no cap.
  std::uint64_t activation_cap = 0;
  bool within_cap(const StageCost& c) const {
    return activation_cap == 0 || held_activation_bytes(c, in_flight, kept_floor, w_lag) <= activation_cap;
  }
  // Bytes per microbatch the host link moves behind the forward: the
  // swapped layers' activations, and apart their W stash, each within it.
  std::uint64_t swap_cap = 0;
  double swap_ms_per_byte = 0;     // host-link transfer time of one byte
  SwapExposure exposure;
  // Exposed swap time per microbatch for `bytes` of activations and
  // `stash` bytes of W's stash swapped per microbatch.
  double swap_cost_ms(std::uint64_t bytes, std::uint64_t stash = 0) const {
    return exposure.stall_ms(static_cast<double>(bytes) * swap_ms_per_byte, static_cast<double>(stash) * swap_ms_per_byte);
  }
};

struct PolicySolution {
  bool fits = false;
  double cost_ms = 0;  // recompute + exposed swap per microbatch
  double recompute_ms = 0;
  std::uint64_t kept = 0, swap = 0, recompute_peak = 0, peak = 0;
  std::uint64_t swap_stash = 0;  // the swapped layers' W stash (split backward)
};

// Cheapest per-layer policy whose peak_memory_bound fits the budget, with
// swap traffic within swap_cap. Ranges of <= 6 layers: every policy. Longer
// ones: two greedy starts (recompute only; swap
// the layers dearest to recompute first), each followed by local
// improvement (undo a recompute, turn it into a swap, exchange a recompute
// for a cheaper one) until nothing improves; the cheaper result wins.
// Writes one policy per item to `out`. When nothing fits, returns the
// least-memory policy found with fits = false.
PolicySolution solve_policy(const PolicyProblem& prob, const std::vector<PolicyItem>& items,
                            std::vector<MemoryPolicy>& out);

// The fitting policies of a short range (<= 6 items; empty for longer
// ones) that no other fitting policy beats in both recompute ms and swap
// bytes, cheapest (by the solver's cost) first: alternatives the planner
// judges by simulation where the cost misses the schedule's slack.
struct FrontPolicy {
  std::vector<MemoryPolicy> policy;
  double recompute_ms = 0;
  std::uint64_t swap_bytes = 0;  // activations; W's stash of the same layers goes with them
  double cost_ms = 0;
};
std::vector<FrontPolicy> policy_front(const PolicyProblem& prob, const std::vector<PolicyItem>& items);

}  // namespace pw
