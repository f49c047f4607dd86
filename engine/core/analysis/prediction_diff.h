#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/events/event.h"

namespace pw {

// Measured against predicted time per stage and action kind (means per action).
struct KindComparison {
  std::int32_t stage = 0;
  EventKind kind = EventKind::Forward;
  int measured_count = 0, predicted_count = 0;
  double measured_ms = 0, predicted_ms = 0;  // mean duration
  double ratio() const { return predicted_ms > 0 ? measured_ms / predicted_ms : 0; }
};

// The first action (in measured time) whose start, counted from its
// iteration's start, differs from the prediction's by more than the threshold.
struct Divergence {
  std::int32_t stage = 0;
  EventKind kind = EventKind::Forward;
  std::int32_t microbatch = -1;
  int index = 0;  // the stage's n-th action of the iteration
  std::int64_t measured_offset_ns = 0, predicted_offset_ns = 0;
  std::int64_t measured_duration_ns = 0, predicted_duration_ns = 0;
};

struct PredictionDiff {
  int iterations = 1;  // measured iterations compared (pool_predictions: their means)
  std::int64_t measured_iteration_ns = 0, predicted_iteration_ns = 0;
  std::vector<KindComparison> kinds;  // by stage, then kind
  std::optional<Divergence> divergence;
  std::int64_t threshold_ns = 0;
};

// How far the cost model was off on a run, as a fraction: the larger of
// the iteration's relative error and the time-weighted error of its
// actions (sum over stages and kinds of |measured - predicted| x count,
// over the measured time). A model right on the total but wrong per action
// (one scale factor per stage) still counts as wrong: a change that moves
// work between kinds or sizes would be predicted with that error.
double model_error(const PredictionDiff& d);

// The iteration of each event: the one whose window (the attribution's) on
// the event's stage holds its start; -1 outside every window.
std::vector<int> iteration_of_events(const std::vector<Event>& events, const Attribution& a);

// Where each complete iteration of `a` starts: the first compute action
// (forward or backward, core/events/event_kinds) of the iteration on any
// stage, an event belonging to the iteration whose window on its stage
// holds its start; an iteration without compute starts at its earliest
// window. Index: iteration. The origin every comparison aligns at.
std::vector<std::int64_t> iteration_starts(const std::vector<Event>& events, const Attribution& a);

// Compares iteration `measured_iteration` of a run with iteration
// `predicted_iteration` of the simulator's timeline of the same plan. Both
// are aligned at their iteration's start (iteration_starts); a stage's
// actions (compute and optimizer step) are matched in order. `threshold_ns` < 0: 5% of the predicted
// iteration. The attributions give the iteration windows.
PredictionDiff compare_prediction(const std::vector<Event>& measured, const Attribution& measured_attribution,
                                  int measured_iteration, const std::vector<Event>& predicted,
                                  const Attribution& predicted_attribution, int predicted_iteration,
                                  std::int64_t threshold_ns = -1);

// A run and a prediction cut into iterations once (one pass over each's
// events), to compare one iteration or pool many without cutting again:
// iteration() is compare_prediction, pooled() is pool_predictions. Holds
// pointers into both event lists, which must outlive it.
class PredictionComparison {
 public:
  PredictionComparison(const std::vector<Event>& measured, const Attribution& measured_attribution,
                       const std::vector<Event>& predicted, const Attribution& predicted_attribution);
  ~PredictionComparison();
  PredictionDiff iteration(int measured_iteration, int predicted_iteration, std::int64_t threshold_ns = -1) const;
  PredictionDiff pooled(const std::vector<std::pair<int, int>>& pairs) const;

 private:
  struct Timelines;
  std::unique_ptr<Timelines> t_;
};

// Many measured iterations against their predicted ones, pooled: each pair
// is (measured iteration, predicted iteration); the iteration times are the
// means over the pairs and each stage's and kind's time the mean over all
// its actions in them. No divergence (that belongs to one iteration). What a
// run's mean iteration, the figure a user compares plans by, was predicted as.
PredictionDiff pool_predictions(const std::vector<Event>& measured, const Attribution& measured_attribution,
                                const std::vector<Event>& predicted, const Attribution& predicted_attribution,
                                const std::vector<std::pair<int, int>>& pairs);

}  // namespace pw
