#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pw {

// What happens to a layer's saved activations between its forward and
// backward pass.
enum class MemoryPolicy : std::uint8_t { Keep = 0, Recompute = 1, Swap = 2 };
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

  int layer_count() const { return static_cast<int>(policy.size()); }
  // Stage holding `layer`, or -1.
  int stage_of(int layer) const;
};

// Equal layer counts per stage, every layer kept: the Megatron/DeepSpeed
// default and the fallback when no planner is named.
Plan uniform_partition(int layers, int stages);

// Throws std::invalid_argument naming the problem when ranges do not tile
// [0, layers) in order or the policy vector has the wrong size.
void validate_plan(const Plan& plan, int layers);

nlohmann::json to_json(const Plan& plan);
Plan plan_from_json(const nlohmann::json& j);

// Number of layers whose stage differs between two plans of one model.
int layers_moved(const Plan& from, const Plan& to);

}  // namespace pw
