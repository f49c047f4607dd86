#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// A plan as a value: which layers each (virtual) stage holds, what each
// layer keeps for its backward, and the figures and search rows planning
// left in it. Plain data below every layer that passes plans around: the
// job's scripted migrations (spec), the cost model (cost), the simulator
// (sim) read it; the planners (plan/) make it, and plan/plan.h adds what
// is done with one (uniform_partition, JSON, layers_moved).
namespace pw {

// What happens to a layer's saved activations between its forward and
// backward pass. Selective (Korthikanti et al. 2022): keep them but the
// attention core's (softmax, its dropout mask, attention over V), which is
// recomputed before the backward; on a layer without one it keeps all.
enum class MemoryPolicy : std::uint8_t { Keep = 0, Recompute = 1, Swap = 2, Selective = 3 };
const char* to_string(MemoryPolicy p);
std::optional<MemoryPolicy> memory_policy_from_string(const std::string& s);

// A contiguous layer range held by one (virtual) stage.
struct StageRange {
  int first_layer = 0;
  int last_layer = -1;  // inclusive
  int size() const { return last_layer - first_layer + 1; }
};

// Predicted figures for one stage of a plan.
struct StagePrediction {
  double time_ms = 0;  // forward + backward (+ recompute) per microbatch
  std::uint64_t peak_memory_bytes = 0;
  std::uint64_t memory_budget_bytes = 0;
  // With replicas: the stage's gradient all-reduce per iteration, and the
  // part of it its optimizer step waited for (not hidden by the backward).
  double sync_ms = 0;
  double sync_exposed_ms = 0;
};

// One (stages, replicas) split of cluster.devices tried under
// pipeline.stages or parallel.data "auto": the best plan made for it
// (core/plan/parallel_search.h).
struct ParallelChoice {
  int tensor = 1;  // parallel.tensor: devices per stage
  int stages = 0;
  int replicas = 0;
  int microbatch_size = 0;
  int microbatches = 0;  // per replica
  double iteration_time_ms = 0;
  double throughput_samples_per_s = 0;
  double sync_exposed_ms = 0;  // the largest stage's
  std::uint64_t peak_memory_bytes = 0;
  bool feasible = false;
  std::string schedule;
  std::string reason;  // why infeasible, or why it could not be planned
};

// One microbatch size tried under training.microbatch_size "auto": the
// best plan the planner made for it (core/plan/microbatch_search.h).
struct MicrobatchChoice {
  int microbatch_size = 0;
  int microbatches = 0;
  double iteration_time_ms = 0;
  std::uint64_t peak_memory_bytes = 0;  // the largest device's
  bool feasible = false;
  std::string schedule;  // the family that won under schedule "auto"
  std::string reason;    // why infeasible, or why it could not be planned
  // Not planned: no plan of this size can beat the one chosen, since its
  // lower bound (core/plan/iteration_bound.h) is already slower.
  bool pruned = false;
  double lower_bound_ms = 0;
};

// pipeline.schedule "generated": the order generated for one plan from its
// own per-stage costs and memory (core/plan/plan_order.h), with the inputs
// it was generated from. Stored in the plan (and its JSON) so that the
// simulator and every engine worker run exactly this order rather than
// each generating one.
struct PlanOrder {
  int devices = 0, microbatches = 0;        // the shape it was made for
  std::vector<double> f_ms, b_ms, w_ms;     // per virtual stage and microbatch (B: input gradient + recompute)
  std::vector<double> hop_ms;               // per cut between virtual stages j and j+1
  std::vector<double> released_at_b;        // per virtual stage: share of a held microbatch B frees
  std::vector<double> held;                 // per virtual stage: share of the device's unit its F adds
  std::vector<double> memory_limit;         // per device, in microbatches held (activation units)
  std::string source;                       // the candidate that won ("greedy ...", "zb-h1", "unit costs", ...)
  double generated_ms = 0;                  // its flushed iteration under these times (time_orders)
  double unit_order_ms = 0;                 // the unit-cost order's under the same times
  std::vector<std::string> order;           // per device (order_to_text: "F0 B0 W0 ... S")
};

// A partition plus a per-layer memory policy. With interleaving or a V
// (zb-v, dualpipe-v), `stages` holds stages x chunks virtual stages; the
// schedule places them (Schedule::device_of_virtual_stage).
struct Plan {
  std::string planner;
  std::vector<StageRange> stages;
  std::vector<MemoryPolicy> policy;  // one per layer
  bool feasible = true;
  std::string reason;  // why infeasible
  double iteration_time_ms = 0;
  double throughput_samples_per_s = 0;
  double planning_time_ms = 0;
  int layers_moved = 0;  // incremental replans: layers that change stage
  // The schedule planned for: the job's, or under pipeline.schedule "auto"
  // the family that won, with the best 1F1B plan's simulated time to
  // compare (0 when no 1F1B plan was made).
  std::string schedule;
  double best_1f1b_ms = 0;
  // The microbatch size planned for (0: not recorded, the job's), and under
  // microbatch_size "auto" every size tried, in increasing size.
  int microbatch_size = 0;
  std::vector<MicrobatchChoice> microbatch_search;
  std::vector<StagePrediction> predicted;
  // Replicas of the whole pipeline (parallel.data): the predictions count
  // every replica's samples. `replicas` per stage: PipeDream's optimizer
  // may replicate single stages further (microbatch i of stage s on its
  // replica i mod r_s); empty = every stage has data_parallel.
  int data_parallel = 1;
  std::vector<int> replicas;
  // Devices each stage is split over (parallel.tensor); the plan uses
  // tensor x stages x data_parallel devices.
  int tensor_parallel = 1;
  // Under stages / replicas "auto": every split tried, by stages.
  std::vector<ParallelChoice> parallel_search;
  // Under pipeline.schedule "generated": the order this plan runs (absent:
  // the order generated for unit costs, made from the shape alone).
  std::optional<PlanOrder> generated;

  int layer_count() const { return static_cast<int>(policy.size()); }
  // Replicas of (virtual) stage s: replicas[s] where given, else data_parallel.
  int replicas_of(int s) const {
    return s >= 0 && s < static_cast<int>(replicas.size()) ? replicas[s] : data_parallel;
  }
  // Workers of (virtual) stage s within one replica of the pipeline: its
  // replicas over data_parallel (1 without per-stage replicas). They take
  // its microbatches round-robin (docs/simulator.md models them).
  int stage_share(int s) const {
    return replicas.empty() ? 1 : std::max(1, replicas_of(s) / std::max(1, data_parallel));
  }
  // Stage holding `layer`, or -1.
  int stage_of(int layer) const;
};

// Throws std::invalid_argument naming the problem when ranges do not tile
// [0, layers) in order or the policy vector has the wrong size.
void validate_plan(const Plan& plan, int layers);

}  // namespace pw
