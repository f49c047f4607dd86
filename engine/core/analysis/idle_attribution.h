#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/events/event.h"

namespace pw {

// Why a stage was not computing (docs/explain.md defines each precisely).
enum class IdleCause : std::uint8_t {
  Fill,          // waiting for a peer before the stage's first forward or first backward of the iteration
  Drain,         // waiting for a peer in the cool-down (backwards after the last forward), and at the
                 // iteration's end for as long as the other stages still run backwards
  Dependency,    // waiting for a named peer's activation or gradient in the steady state
  Transfer,      // the peer's compute is done, its output is on the link
  Recompute,     // memory policy: recomputing dropped activations
  SwapStall,     // memory policy: waiting for (or synchronously doing) a swap to or from the host
  Optimizer,     // the optimizer step and its wait for outstanding sends just before it
  HostOverhead,  // the input is there, the stage is not computing: host work between actions
  Imbalance,     // at the iteration's end, waiting after all backwards for other stages' longer tails
  Migration,     // moving layers between stages
  GradientSync,  // the optimizer step waiting, after the stage's compute, for the all-reduce of its
                 // gradients over its data-parallel replicas (the last bucket's end)
  TensorSync,    // the tensor-parallel group's all-reduces (tensor_allreduce events), which block the
                 // stage's compute: communication, neither compute nor waiting for a peer
};
constexpr int kIdleCauseCount = 12;
const char* to_string(IdleCause c);

struct IdleInterval {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int32_t stage = 0;
  std::int32_t iteration = 0;
  IdleCause cause = IdleCause::HostOverhead;
  std::int32_t peer = -1;      // Fill, Drain, Dependency, Transfer: the stage whose output was awaited
  bool gradient = false;       // ... its gradient (else its activation)
  std::int32_t microbatch = -1;  // of the action that waited
};

// The cause's name in reports: a dependency names its peer and what was
// awaited ("wait_gradient_from_stage_2"), the others their cause.
std::string cause_name(const IdleInterval& i);
std::string dependency_name(int peer, bool gradient);

// One stage's iteration: compute + every cause = wall, to the nanosecond.
struct StageIteration {
  std::int32_t stage = 0;
  std::int32_t iteration = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // the window attributed
  std::int64_t compute_ns = 0;            // forward and backward (is_compute), without nested policy work
  std::array<std::int64_t, kIdleCauseCount> cause_ns{};
  // Dependency time per awaited peer: [peer] -> ns (activation, gradient).
  std::vector<std::int64_t> activation_wait_ns, gradient_wait_ns;
  std::int64_t wall_ns() const { return end_ns - start_ns; }
};

struct AttributionOptions {
  // Optimizer steps per iteration per stage: 1 for flush schedules, the
  // microbatch count for PipeDream's per-microbatch updates.
  int optimizer_steps_per_iteration = 1;
  int iteration = -1;          // only this one; -1: all
  bool keep_intervals = true;  // false: totals only
};

struct Attribution {
  int iterations = 0;  // complete iterations found
  int stages = 0;
  std::vector<StageIteration> stage_iterations;  // by iteration, then stage
  std::vector<IdleInterval> intervals;           // by stage, then time
};

// Assigns every nanosecond of each stage's iterations to compute or one
// cause. Iterations are delimited per stage by its optimizer steps: stage
// s's iteration i runs from the end of the step that closed i-1 (the run's
// first event for i = 0) to the end of the step that closes i; the last
// complete iteration extends to the end of the slowest stage's, so the
// pipeline's drain is counted. Events after a stage's last complete
// iteration are left out (a run stopped mid-iteration). A run without
// optimizer steps is one iteration. Producers of an action's input are
// matched by microbatch and layers (an activation for layers from L is the
// forward ending at L-1, a gradient the backward starting at last+1), so
// the schedule is not needed; the engine's receive events give the arrival
// time, the simulator's send events the link's. The events are one
// pipeline's: with data-parallel replicas, one replica's (they share stage
// numbers). Runs in O(n log n).
Attribution attribute_idle(std::vector<Event> events, const AttributionOptions& opt = {});

}  // namespace pw
