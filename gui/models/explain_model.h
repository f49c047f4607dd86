#pragma once
#include <QFuture>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QTimer>
#include <QString>
#include <array>
#include <functional>
#include <memory>
#include <utility>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/analysis/explain_report.h"
#include "core/analysis/idle_attribution.h"
#include "core/analysis/predicted_timeline.h"
#include "core/analysis/suggestions.h"

namespace pw::gui {

class JobModel;
class RunModel;

// One stage's row of the Explain dock: compute + causes = wall.
struct ExplainStage {
  int stage = 0;
  std::int64_t wall_ns = 0, compute_ns = 0;
  std::array<std::int64_t, kIdleCauseCount> cause_ns{};
};

struct ExplainResult {
  int iterations = 0;                  // complete iterations found in the run
  int iteration = -1;                  // the one shown; -1: all complete ones, summed
  std::vector<ExplainStage> stages;    // by stage
  std::vector<IdleInterval> intervals;  // by stage, then time
  // The simulator's timeline under the measured one (core's predict_timeline,
  // aligned at iteration starts), when asked for and the run has its inputs;
  // its divergence is that of `iteration` (-1: the last complete one).
  std::shared_ptr<const PredictedTimeline> predicted;
  QString predicted_error;  // non-empty: the prediction failed, and why
  // Core's explain report of the same events (core/analysis/explain_report.h),
  // `pipewright explain`'s: the model's error on the run and the advice
  // that holds despite it. Null until computed; computed with suggestions
  // once the run's job is loaded.
  std::shared_ptr<const ExplainReport> report;
};

// The predicted timeline of `events` (core/analysis/predicted_timeline):
// every complete iteration's prediction aligned under it, and the first
// divergence of `iteration` (-1: the last complete one). Pure.
std::shared_ptr<const PredictedTimeline> predict_events(const std::vector<Event>& events, const PredictionInputs& inputs,
                                                        int iteration = -1);

// What the predicted timeline needs (a recorded run's job, profile and
// plans), or why there is none.
struct PredictionSource {
  std::shared_ptr<const PredictionInputs> inputs;
  QString none_reason;
};

// Core's attribution (core/analysis/idle_attribution) of `events`, summed
// per stage over the complete iterations (or only `iteration`). Pure: the
// model runs it on a worker.
ExplainResult explain_events(std::vector<Event> events, int steps_per_iteration, int iteration = -1);

// A run's job and its suggestions' candidates simulated once (core's
// simulate_suggestions, on a worker), or the reason there are none.
struct ExplainJob {
  nlohmann::json doc;
  std::shared_ptr<const SuggestionReport> simulated;
  QString none_reason;  // non-empty: no suggestions can be made, and why
  int steps_per_iteration = 1;
};
ExplainJob simulate_job_suggestions(const nlohmann::json& job);

// The advice the dock shows: the report's (core's advice rule, exactly what
// `pipewright explain` offers for the run), or the reason there is none.
struct ExplainSuggestions {
  SuggestionReport report;
  QString none_reason;  // non-empty: no suggestions are offered, and why
  std::vector<std::string> notes;  // the report's notes on the advice (withheld, unchecked, not simulated)
  double model_error = -1;         // what a gain had to exceed; < 0: unknown
};

// Applies a suggestion's --set assignments to the designer's job as one
// change (core's apply_override, as `pipewright simulate --set` does).
void apply_suggestion(JobModel& job, const Suggestion& s);

// The Explain dock's model (docs/studio.md, docs/explain.md): where every
// idle nanosecond of the monitored run went, per stage and cause, the
// intervals of a cause (for the timeline's highlight) and the suggestions
// for the run's job. Everything is computed on workers (QtConcurrent): the
// GUI thread only snapshots the run's events (a copy) and reads results.
// A run that changes while a computation runs is computed again when it
// ends (at most one in flight, at most one start per kMinIntervalMs), so a
// live run is explained as it goes without copying its events every tick.
class ExplainModel : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMinIntervalMs = 1000;
  explicit ExplainModel(QObject* parent = nullptr);
  ~ExplainModel() override;

  void setRun(const RunModel* run);
  // -1: all complete iterations summed (default), else only that one.
  void setIteration(int iteration);
  int iteration() const { return iteration_; }

  // The run's job, loaded on a worker (a run database is read there);
  // none_reason is shown when there is no loader or it yields null.
  void setJobLoader(std::function<nlohmann::json()> load, const QString& none_reason);
  void clearJob(const QString& none_reason);

  // The predicted timeline's inputs, loaded on a worker; clearPrediction
  // (every new source starts there) says why a run has none.
  void setPredictionLoader(std::function<PredictionSource()> load);
  void clearPrediction(const QString& none_reason);
  bool predictionReady() const { return prediction_ready_; }
  bool predictionAvailable() const { return prediction_.inputs != nullptr; }
  const QString& predictionNoneReason() const { return prediction_.none_reason; }
  // "Show predicted": the prediction is computed (with the attribution, on
  // the same worker) only while this is on.
  void setShowPredicted(bool on);
  bool showPredicted() const { return show_predicted_; }

  const ExplainResult& result() const { return result_; }
  // The report's advice; ready once the job is loaded and a report was computed with it.
  const ExplainSuggestions& suggestions() const { return suggestions_; }
  bool suggestionsReady() const { return suggestions_ready_; }

  // The intervals attributed to `cause` (on `stage`, or every stage when
  // -1), by stage then time: what the timeline highlights.
  std::vector<IdleInterval> intervalsOf(IdleCause cause, int stage = -1) const;

  // Blocks until nothing is computing and the results are applied (tests).
  void waitIdle();

 signals:
  void updated();             // result() changed
  void suggestionsUpdated();  // suggestions() changed
  void predictionAvailabilityChanged();

 private:
  void schedule();
  void startCompute();
  void onComputed();
  void onJobLoaded();
  void takeAdvice();  // suggestions_ from result_'s report
  void onPredictionLoaded();
  void recompute();  // the run's result is stale: compute again

  // A result and the job generation its report was given (~0: none).
  using ComputedResult = std::pair<ExplainResult, quint64>;
  const RunModel* run_ = nullptr;
  int iteration_ = -1;
  int steps_per_iteration_ = 1;
  quint64 computed_revision_ = ~quint64{0};
  bool dirty_ = false;
  QTimer throttle_;
  QElapsedTimer since_start_;
  bool compute_pending_ = false, suggest_pending_ = false;  // a result not yet taken
  ExplainResult result_;
  QFutureWatcher<ComputedResult> compute_;
  ExplainJob job_;
  bool job_ready_ = false;
  quint64 job_generation_ = 0;  // which job the running computation was given
  quint64 result_job_generation_ = ~quint64{0};
  ExplainSuggestions suggestions_;
  bool suggestions_ready_ = false;
  QFutureWatcher<ExplainJob> suggest_;
  PredictionSource prediction_;
  bool prediction_ready_ = false, prediction_pending_ = false, show_predicted_ = false;
  QFutureWatcher<PredictionSource> prediction_load_;
};

}  // namespace pw::gui
