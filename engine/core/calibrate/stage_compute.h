#pragma once
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/events/event.h"
#include "core/model/layer_profile.h"
#include "core/plan/plan.h"

namespace pw {

// What one (virtual) stage's compute took per microbatch in a run, from its
// events: means over the iterations after the first (whose cold caches and
// connection set-up are a one-off). Means, not medians: on a shared CPU a
// stall inside a forward costs the run its whole length, and what is
// predicted, the mean iteration time, counts it. Nested work is taken out
// of its parent: a forward without the swap-outs inside it, a backward
// without the recomputes and swap-ins inside it (the cost model prices
// those apart). A split backward's B and W are one backward: bwd_ms is
// their sum per microbatch, and bwd_weight_ms W's share.
struct MeasuredStageCompute {
  StageRange range;          // the layers the stage held
  int device = 0;
  int microbatches = 0;      // forwards the means were taken over
  double fwd_ms = 0;
  double bwd_ms = 0;         // full backward, or B + W
  double bwd_weight_ms = -1; // W alone when the run split its backward; < 0 otherwise
  double optimizer_ms = 0;   // the device's optimizer step, per iteration
};

// Where each device's first iteration ends (its first optimizer step), when
// it has a second one to measure instead; 0 otherwise. What the fits below
// leave out: cold caches and connection set-up are a one-off.
std::map<int, std::int64_t> warm_from(const std::vector<Event>& events);

// One entry per (virtual) stage seen in `events`, in layer order. Events
// before each device's first optimizer step (its first iteration) are left
// out when the device has later ones.
std::vector<MeasuredStageCompute> measure_stage_compute(std::vector<Event> events);

// Several runs of one partition (runs of one job at one size): each stage's
// figures averaged over the runs, a run counting once whatever its length
// (a run's mean is already over its iterations); microbatches summed. On a
// shared machine one job's runs differ by 10-40% minutes apart, and a
// calibration from one run fits that run's luck. Throws
// std::invalid_argument when the runs' stages differ (partition, device,
// split backward or not); an empty list gives an empty result.
std::vector<MeasuredStageCompute> mean_stage_compute(const std::vector<std::vector<MeasuredStageCompute>>& runs);

// The time a stage spends between its events per action (forward, backward,
// optimizer step) over the iterations after the first: the host work
// outside every event that delays the next action
// (DeviceSpec::action_overhead_us). Gaps before an optimizer step are left
// out: they are its wait for outstanding sends, which is communication.
// The busiest device's (its events but receives, plus its gaps, the longest):
// the iteration goes at its pace, and devices differ (on a host transport
// the stage that posts the receives its peer is already sending into stalls
// on the socket far more often), so a mean over devices would price the
// bottleneck at the idler stage's overhead. nullopt when the events hold no
// action.
std::optional<double> fit_action_overhead_us(std::vector<Event> events);
// The same over several runs' events, each run's gaps its own (runs at
// different times share no timeline: pooled, the time between two runs
// would read as one gap), the runs' gaps, busy times and actions summed per
// device.
std::optional<double> fit_action_overhead_us(const std::vector<std::vector<Event>>& runs);

// `profile` with each stage's layers' forward, backward and optimizer times
// scaled so the stage's sums equal what was measured. Co-running stages on
// a shared CPU (caches, memory bandwidth, the scheduler) are slower than a
// profile that times each layer alone; scaling per stage keeps the layers'
// proportions within it, so the profile still serves plans with other
// partitions. Stages without a measurement keep their costs. A stage
// measured with a split backward has its layers' B and W scaled apart (the
// W share of bwd_ms becomes what was measured); otherwise W keeps its share.
// The profile records what was done in `assumptions`.
ModelProfile calibrate_profile(const ModelProfile& profile, const std::vector<MeasuredStageCompute>& measured);

}  // namespace pw
