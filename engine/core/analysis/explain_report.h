#pragma once
// The explain report (docs/explain.md): where a recorded run's time went,
// its critical path, how far the simulator was off on it and the advice
// that holds despite that. Computed here once; `pipewright explain` prints
// it (or its JSON) and the studio's Explain dock draws it, so the two never
// disagree about which suggestions a run earns.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/critical_path.h"
#include "core/analysis/idle_attribution.h"
#include "core/analysis/offload_summary.h"
#include "core/analysis/predicted_timeline.h"
#include "core/analysis/suggestions.h"

namespace pw {

// What a run recorded that the report reads, besides its events.
struct ExplainSources {
  nlohmann::json job;  // the job document as recorded; null: the run recorded none
  // The prediction's inputs (prediction_inputs of the recorded job,
  // profile and plans); null with the reason in prediction_none.
  std::shared_ptr<const PredictionInputs> prediction;
  std::string prediction_none;
  // The job's candidates already simulated (simulate_suggestions of `job`):
  // a caller that explains one run many times (the studio, as a live run
  // grows) simulates them once. Null: simulated here when asked for.
  std::shared_ptr<const SuggestionReport> simulated;
  int planned_replicas = 1;  // the replicas the run trained with
};

struct ExplainReportOptions {
  std::optional<int> iteration;        // default: the last complete one
  std::optional<double> threshold_ms;  // predicted vs measured; default 5% of the predicted iteration
  bool suggestions = true;
  int max_suggestions = 5;
};

// The steps' wait for the replicas' all-reduce in the explained iteration.
struct GradientSyncSummary {
  std::int64_t ns = 0;  // summed over the stages
  int largest_stage = -1;
  std::int64_t largest_stage_ns = 0;
};

struct ExplainReport {
  int iterations = 0;  // complete iterations in the events
  int iteration = -1;  // the one explained
  // False (and nothing below computed) when the events have no complete
  // iteration or `iteration` is not one of them: the caller refuses.
  bool explained = false;
  Attribution attribution;      // every iteration (the path may reach into the one before)
  CriticalPath critical_path;   // of `iteration`
  std::optional<GradientSyncSummary> gradient_sync;  // none: no replicas and no such wait
  std::optional<OffloadSummary> offload;             // none: no stage swapped in the iteration
  std::optional<PredictedTimeline> prediction;       // predicted vs measured, when the run has its inputs
  // model_error_on_run of the prediction: what a suggestion's gain must
  // exceed (withhold_within_error); < 0: unknown.
  double model_error = -1;
  bool suggestions_asked = false;
  SuggestionReport advice;         // offered suggestions; the withheld named in its notes
  std::vector<std::string> notes;  // what could not be computed, and why; advice's notes included

  // The explained iteration's rows of `attribution`, by stage.
  std::vector<const StageIteration*> stages() const;
};

// Explains `events` (one pipeline's: with replicas, one replica's). Throws
// only what the recorded documents' JSON access throws (nlohmann::json
// exceptions: the recording is damaged); every other failure to predict or
// simulate is a note.
ExplainReport explain_report(const std::vector<Event>& events, const ExplainSources& sources,
                             const ExplainReportOptions& opt = {});

}  // namespace pw
