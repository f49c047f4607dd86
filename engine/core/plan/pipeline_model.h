#pragma once
#include <cstdint>
#include <vector>

#include "core/cost/stage_cost.h"
#include "core/plan/planner.h"
#include "core/plan/policy_solver.h"

namespace pw {

// The best memory policy the solver found for one stage holding one layer
// range, with the figures the partition search needs.
struct RangeChoice {
  bool fits = false;          // peak_memory_bound within budget, swap traffic hidden
  double compute_ms = 0;      // forward + backward + recompute (+ exposed swap) per microbatch
  double period_ms = 0;       // steady-state time per microbatch: compute (+ optimizer when
                              // the schedule steps per microbatch) or a link transfer, if slower
  double recompute_ms = 0;
  // Once per iteration (all schedules but GPipe): backwards that wait for
  // their swap-ins, from the schedule's order (SwapExposure).
  double drain_ms = 0;
  std::uint64_t swap_bytes = 0;
  std::uint64_t peak_bytes = 0;
};

// The planners' view of a PlanRequest: per-layer prefix sums, what the
// schedule keeps in flight at each stage, and the per-range memory policy
// solver. It evaluates memory through the cost model's peak_memory_bound,
// the same bound the simulator never exceeds, so a range that "fits" here
// does not run out of memory in simulation.
//
// The plan space every planner but pipedream/gpipe/uniform searches: each
// stage's bound fits the device budget and its swap traffic per microbatch
// (one direction over the host link) takes no longer than its forward
// compute, so the host link keeps up with the pipeline.
class PipelineModel {
 public:
  explicit PipelineModel(const PlanRequest& req);

  int layers() const { return layers_; }
  int stages() const { return stages_; }  // virtual stages (devices x chunks)
  int microbatches() const { return m_; }
  ScheduleKind schedule() const { return kind_; }
  int in_flight(int stage) const { return in_flight_[stage]; }
  int weight_versions(int stage) const { return versions_[stage]; }
  std::uint64_t budget(int stage) const { return budget_[stage]; }
  // Compute slowdown of the device running `stage` (1 = nominal).
  double slowdown(int stage) const { return slow_[stage]; }

  // Nominal compute of layers [a, b]; a stage's own is these x slowdown.
  double fwd_ms(int a, int b) const { return fwd_[b + 1] - fwd_[a]; }
  double bwd_ms(int a, int b) const { return bwd_[b + 1] - bwd_[a]; }
  double optimizer_ms(int a, int b) const { return opt_[b + 1] - opt_[a]; }
  // W's share of the backward of layers [a, b] (weight_grad_ms).
  double bwd_weight_ms(int a, int b) const { return bww_[b + 1] - bww_[a]; }
  // Virtual stage `stage`'s activation to the next stage (it ends at b) /
  // its input gradient to the previous one (it starts at a), each over its
  // cut's link (cut_link): a cut across nodes costs what the simulator
  // charges it, not the device's own link.
  double send_out_ms(int stage, int b) const;
  double send_in_ms(int stage, int a) const;
  // The link between virtual stages `cut` and cut + 1: the simulator's
  // pipeline_link of their devices (the node link where any replica's
  // pipeline crosses nodes there; the device's own without a topology).
  const LinkSpeed& cut_link(int cut) const { return cut_link_[cut]; }
  // The same as send_*, zero where the neighbouring virtual stage runs on
  // the same device (a V's turn), as the simulator does.
  double hop_out_ms(int stage, int b) const {
    return stage + 1 < stages_ && remote_next_[stage] ? send_out_ms(stage, b) : 0;
  }
  double hop_in_ms(int stage, int a) const { return stage > 0 && remote_next_[stage - 1] ? send_in_ms(stage, a) : 0; }
  int device_of(int stage) const { return device_[stage]; }
  bool splits_backward() const { return split_; }
  double swap_ms(std::uint64_t bytes) const;

  // Solves the memory policy of layers [a, b] held by `stage`: the
  // cheapest policy (least recompute and exposed swap time) whose bound
  // fits. Writes the per-layer policy to out[0 .. b-a] when out is given.
  RangeChoice solve(int stage, int a, int b, MemoryPolicy* out = nullptr) const;
  // solve's selective-recomputation pass (tensor-parallel plans): `pol`
  // (the range's policies, from a) rewritten, the range's cost returned.
  RangeChoice prefer_selective(int stage, int a, int b, std::vector<MemoryPolicy>& pol, std::uint64_t swap,
                               const RangeChoice& solved) const;

  // Short ranges (<= 6 layers): the fitting policies on the Pareto front
  // of recompute and swap, cheapest first (see pw::policy_front).
  std::vector<FrontPolicy> policy_front(int stage, int a, int b) const;

  // The same figures for a given policy (plan.policy indexed by layer).
  RangeChoice evaluate(int stage, int a, int b, const std::vector<MemoryPolicy>& policy) const;

  // Iteration time predicted from per-stage choices without simulating:
  // fill and drain (sum of stage times and hops) plus (m - 1) bottleneck
  // periods for flushing schedules, m periods for PipeDream's.
  double estimate_ms(const std::vector<StageRange>& ranges, const std::vector<RangeChoice>& choices) const;

  // Simulated iteration time of a plan (the figure plans are judged by).
  double simulate_ms(const Plan& plan) const;

  const PlanRequest& request() const { return req_; }

 private:
  std::uint64_t swap_budget_bytes(double fwd_ms) const;
  PolicyProblem problem(int stage, int a, int b, std::vector<PolicyItem>& items) const;
  // swap_stash: the swapped layers' W stash (split backward), which goes
  // to the host from B to W.
  RangeChoice finish(int stage, int a, int b, double rec_ms, std::uint64_t kept, std::uint64_t swap,
                     std::uint64_t rec_peak, std::uint64_t swap_stash) const;

  PlanRequest req_;
  int layers_ = 0, stages_ = 0, m_ = 1;
  ScheduleKind kind_;
  // GPipe: swap stalls fall in the backward phase every microbatch goes
  // through (counted in compute_ms); elsewhere in warm-up / drain (drain_ms).
  bool swap_exposed_ = false;
  std::vector<SwapExposure> exposure_;  // per virtual stage, windows unset
  SwapExposure exposure(int stage, int a, int b) const;
  bool step_per_mb_ = false;    // PipeDream: optimizer step after every backward
  // Split backward (zero bubble): from B to W every layer holds W's stash
  // (its input and output gradient) instead of what it kept, a swapped
  // layer on the host; a microbatch in flight holds the larger of the
  // stage's kept bytes and its unswapped layers' stash (held_floor: every
  // layer's, less the swapped ones' in held_memory_bound; stage_cost's
  // w_stash_bytes_per_mb, as the simulator frees and adds them at B).
  bool split_ = false;
  std::uint64_t held_floor(int a, int b) const;
  // pipeline.memory_cap as the bytes a stage holding [a, b] may keep in
  // flight (0: none): a fraction of 1F1B's min(m, p) microbatches of the
  // range's activations kept whole, so that recompute and swap bring a
  // stage under it; bytes shared equally by a device's chunks.
  std::uint64_t activation_cap(int a, int b) const;
  std::vector<std::uint64_t> act_;  // prefix sums of the layers' activation bytes
  std::vector<std::uint64_t> stash_;
  std::vector<int> in_flight_, versions_, device_;
  std::vector<int> w_lag_;  // per virtual stage: most microbatches between B and W at once (split backward)
  std::vector<bool> remote_next_;  // virtual stage j + 1 on another device
  std::vector<LinkSpeed> cut_link_;  // per cut j (stages j, j + 1); built once, the planners ask per cut
  std::vector<double> slow_;
  std::vector<std::uint64_t> budget_;
  std::vector<double> fwd_, bwd_, bww_, opt_;
  std::vector<std::uint64_t> param_, static_;
  // Range maximum of the layers' backward workspace (sparse table).
  std::vector<std::vector<std::uint64_t>> workspace_;
  std::uint64_t workspace_bytes(int a, int b) const;
};

}  // namespace pw
