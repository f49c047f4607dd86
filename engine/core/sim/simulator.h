#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/gradient_sync.h"
#include "core/events/event.h"
#include "core/model/layer_profile.h"
#include "core/layout/plan_layout.h"
#include "core/schedule/order_timeline.h"
#include "core/schedule/schedule.h"
#include "core/spec/device.h"

namespace pw {

struct SimInput {
  const ModelProfile* profile = nullptr;
  const Plan* plan = nullptr;          // stages.size() == schedule.virtual_stages()
  const Schedule* schedule = nullptr;
  DeviceSpec device;                   // every device alike
  int microbatch_size = 1;
  // Per device compute slowdown (1 = nominal; 2 = takes twice as long):
  // a straggler, thermal throttling, or a provoked imbalance. Empty = all 1.
  std::vector<double> slowdown;
  // Replicas of the pipeline: one is simulated, the others run alike; each
  // stage's gradients are all-reduced over its replicas in buckets before
  // its optimizer step, and the throughput counts every replica.
  GradientSync sync;
  // What an iteration of a flushing schedule costs (order_timeline.h):
  // its longest device window (the engine's back-to-back iterations) or
  // its span (a job that reduces the whole gradient at the step); sets
  // iteration_time_ms and the throughput. PipeDream's is its steady state.
  IterationCost iteration_cost = IterationCost::Window;
};

struct SimStage {
  double busy_ms = 0;  // compute per iteration (forward, backward, recompute, optimizer)
  double busy_fraction = 0;
  std::uint64_t peak_memory_bytes = 0;
  std::uint64_t memory_budget_bytes = 0;
  double time_ms = 0;  // compute per microbatch (forward + backward + recompute)
  // The device's own window: start of its first compute, end of its last.
  // With the optimizer step made speculative (Zero Bubble's post-validation)
  // iterations overlap, and the longest window is the steady-state period.
  double first_start_ms = 0, last_end_ms = 0;
  // Gradient synchronisation per iteration (replicas > 1): the buckets'
  // all-reduce time on the stage's collective stream, and how long its
  // optimizer steps waited for them after their compute was done.
  double sync_ms = 0;
  double sync_exposed_ms = 0;
  // Tensor parallelism: the stage's tensor all-reduces per iteration
  // (forward, backward and recompute), blocking its compute stream; not
  // in busy_ms.
  double tensor_ms = 0;
};

struct SimResult {
  bool feasible = true;
  std::string reason;
  int oom_stage = -1;
  // What one iteration costs (SimInput::iteration_cost): the headline.
  double iteration_time_ms = 0;
  // The flushed iteration, first action to last end on any device.
  double span_ms = 0;
  double throughput_samples_per_s = 0;
  double bubble_fraction = 0;
  // Longest device window (SimStage): the iteration time when iterations
  // overlap (no flush barrier), <= iteration_time_ms.
  double overlapped_iteration_ms = 0;
  // Zero Bubble's bubble rate (Qi et al. 2024, section 5): idle time
  // within the longest device window, 1 - sum of busy / (devices x
  // overlapped_iteration_ms). bubble_fraction measures against the flushed
  // span instead, which counts a device's late start and early end.
  double window_bubble_fraction = 0;
  std::uint64_t events = 0;  // event records produced (compute, transfers, swaps)
  int replicas = 1;          // counted in the throughput
  int tensor = 1;            // devices per stage (parallel.tensor): devices = tensor x stages x replicas
  std::vector<SimStage> stages;
};

// Discrete-event execution of a schedule under the cost model. Each device
// runs its actions in order; an action starts when the device is free and
// its input (activation or gradient) has arrived over the link, which is
// modelled as a FIFO per direction (latency + bytes / bandwidth) overlapping
// compute. Swaps use the host link, one channel per direction: swap-out
// follows a forward, swap-in is issued one action ahead of the backward that
// needs it. Memory is tracked per device over time. Throws
// std::invalid_argument for a plan that does not fit the schedule and
// std::logic_error if the schedule deadlocks.
SimResult simulate(const SimInput& in, EventSink* sink = nullptr);

}  // namespace pw
