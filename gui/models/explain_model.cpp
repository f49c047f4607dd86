#include "gui/models/explain_model.h"

#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "core/analysis/steps_per_iteration.h"
#include "core/spec/job_spec.h"
#include "gui/models/job_model.h"
#include "gui/models/run_export.h"
#include "gui/models/run_model.h"

namespace pw::gui {

ExplainResult explain_events(std::vector<Event> events, int steps_per_iteration, int iteration) {
  AttributionOptions opt;
  opt.optimizer_steps_per_iteration = std::max(1, steps_per_iteration);
  opt.iteration = iteration;
  Attribution a = attribute_idle(std::move(events), opt);
  ExplainResult r;
  r.iterations = a.iterations;
  r.iteration = iteration;
  r.stages.resize(static_cast<std::size_t>(std::max(0, a.stages)));
  for (int s = 0; s < a.stages; ++s) r.stages[static_cast<std::size_t>(s)].stage = s;
  for (const auto& si : a.stage_iterations) {
    if (si.stage < 0 || si.stage >= a.stages) continue;
    auto& st = r.stages[static_cast<std::size_t>(si.stage)];
    st.wall_ns += si.wall_ns();
    st.compute_ns += si.compute_ns;
    for (int c = 0; c < kIdleCauseCount; ++c) st.cause_ns[c] += si.cause_ns[c];
  }
  r.intervals = std::move(a.intervals);
  return r;
}

std::shared_ptr<const PredictedTimeline> predict_events(const std::vector<Event>& events, const PredictionInputs& in,
                                                        int iteration) {
  AttributionOptions opt;
  opt.optimizer_steps_per_iteration = optimizer_steps_per_iteration(in.job.pipeline.schedule, in.job.pipeline.microbatches);
  opt.keep_intervals = false;
  const Attribution a = attribute_idle(events, opt);
  const int it = iteration >= 0 ? std::min(iteration, a.iterations - 1) : a.iterations - 1;
  return std::make_shared<const PredictedTimeline>(predict_timeline(events, a, in, it));
}

ExplainJob simulate_job_suggestions(const nlohmann::json& job) {
  ExplainJob out;
  if (!job.is_object()) {
    out.none_reason = QObject::tr("the run recorded no job");
    return out;
  }
  out.doc = job;
  try {
    JobSpec spec = parse_job(job);
    out.steps_per_iteration = optimizer_steps_per_iteration(spec.pipeline.schedule, spec.pipeline.microbatches);
    out.simulated = std::make_shared<const SuggestionReport>(simulate_suggestions(job));
  } catch (const std::exception& e) {
    out.none_reason = QObject::tr("the run's job cannot be simulated: %1").arg(QString::fromStdString(e.what()));
  }
  return out;
}

void apply_suggestion(JobModel& job, const Suggestion& s) {
  nlohmann::json doc = job.document();
  for (const auto& o : s.overrides) apply_override(doc, o);
  job.setDocument(doc);  // one change, validated once
}

ExplainModel::ExplainModel(QObject* parent) : QObject(parent) {
  connect(&compute_, &QFutureWatcher<ComputedResult>::finished, this, &ExplainModel::onComputed);
  connect(&suggest_, &QFutureWatcher<ExplainJob>::finished, this, &ExplainModel::onJobLoaded);
  connect(&prediction_load_, &QFutureWatcher<PredictionSource>::finished, this, &ExplainModel::onPredictionLoaded);
  throttle_.setSingleShot(true);
  connect(&throttle_, &QTimer::timeout, this, &ExplainModel::schedule);
  clearJob(tr("no run"));
  clearPrediction(tr("no run"));
}

ExplainModel::~ExplainModel() {
  // The workers hold copies only; the attribution is waited for (short),
  // the suggestions' simulations are left to finish in the pool.
  if (compute_pending_) compute_.waitForFinished();
}

void ExplainModel::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  computed_revision_ = ~quint64{0};
  if (run_) {
    connect(run_, &RunModel::changed, this, &ExplainModel::schedule);
    connect(run_, &RunModel::reset, this, &ExplainModel::schedule);
  }
  schedule();
}

void ExplainModel::setIteration(int iteration) {
  if (iteration == iteration_) return;
  iteration_ = iteration;
  recompute();
}

void ExplainModel::recompute() {
  computed_revision_ = ~quint64{0};
  schedule();
}

void ExplainModel::schedule() {
  if (compute_pending_) {
    dirty_ = true;  // computed again when the running one ends
    return;
  }
  if (since_start_.isValid() && since_start_.elapsed() < kMinIntervalMs) {
    dirty_ = true;
    if (!throttle_.isActive()) throttle_.start(static_cast<int>(kMinIntervalMs - since_start_.elapsed()));
    return;
  }
  startCompute();
}

void ExplainModel::startCompute() {
  dirty_ = false;
  if (!run_ || run_->revision() == computed_revision_) return;
  computed_revision_ = run_->revision();
  // The snapshot is the only work done here: the tracks are appended on this
  // thread, so they cannot be read from the worker.
  std::vector<Event> events = snapshot_events(*run_);
  const int steps = steps_per_iteration_, it = iteration_;
  since_start_.start();
  compute_pending_ = true;
  std::shared_ptr<const PredictionInputs> predict = show_predicted_ ? prediction_.inputs : nullptr;
  // The report (explain's) is computed from the same snapshot, with the
  // job's candidates once they are simulated: the advice needs the model's
  // error on these very events.
  ExplainSources sources;
  sources.job = job_.doc;
  sources.simulated = job_.simulated;
  sources.prediction = prediction_.inputs;
  sources.prediction_none = prediction_.none_reason.toStdString();
  ExplainReportOptions report_opt;
  if (it >= 0) report_opt.iteration = it;
  report_opt.suggestions = job_ready_ && job_.simulated;
  const quint64 generation = job_ready_ ? job_generation_ : ~quint64{0};
  compute_.setFuture(QtConcurrent::run([ev = std::move(events), steps, it, predict, sources = std::move(sources),
                                        report_opt, generation]() mutable {
    std::shared_ptr<const PredictedTimeline> predicted;
    QString error;
    if (predict) {
      try {
        predicted = predict_events(ev, *predict, it);
      } catch (const std::exception& e) {
        error = QString::fromStdString(e.what());
      }
    }
    std::shared_ptr<const ExplainReport> report;
    try {
      report = std::make_shared<const ExplainReport>(explain_report(ev, sources, report_opt));
    } catch (const std::exception& e) {
      auto failed = std::make_shared<ExplainReport>();
      failed->notes.push_back(std::string("the run's recorded documents cannot be read: ") + e.what());
      report = std::move(failed);
    }
    ExplainResult r = explain_events(std::move(ev), steps, it);
    r.predicted = std::move(predicted);
    r.predicted_error = error;
    r.report = std::move(report);
    return std::make_pair(std::move(r), generation);
  }));
}

void ExplainModel::onComputed() {
  // A late signal of a computation waitIdle already took, or of one since replaced.
  if (!compute_pending_ || !compute_.isFinished()) return;
  compute_pending_ = false;
  auto [result, generation] = compute_.future().result();
  result_ = std::move(result);
  result_job_generation_ = generation;
  takeAdvice();
  emit updated();
  emit suggestionsUpdated();
  if (dirty_) schedule();
}

void ExplainModel::setJobLoader(std::function<nlohmann::json()> load, const QString& none_reason) {
  job_ = {};
  job_ready_ = false;
  ++job_generation_;
  suggestions_ = {};
  suggestions_ready_ = false;
  emit suggestionsUpdated();
  suggest_pending_ = true;
  suggest_.setFuture(QtConcurrent::run([load = std::move(load), none_reason] {
    nlohmann::json job;
    try {
      job = load ? load() : nlohmann::json();
    } catch (const std::exception& e) {
      ExplainJob s;
      s.none_reason = QObject::tr("the run's job could not be read: %1").arg(QString::fromStdString(e.what()));
      return s;
    }
    if (job.is_null()) {
      ExplainJob s;
      s.none_reason = none_reason;
      return s;
    }
    return simulate_job_suggestions(job);
  }));
}

void ExplainModel::clearJob(const QString& none_reason) { setJobLoader(nullptr, none_reason); }

void ExplainModel::onJobLoaded() {
  if (!suggest_pending_ || !suggest_.isFinished()) return;
  suggest_pending_ = false;
  job_ = suggest_.future().result();
  job_ready_ = true;
  steps_per_iteration_ = job_.steps_per_iteration;
  takeAdvice();
  emit suggestionsUpdated();
  recompute();  // the report again, now with the job's suggestions
}

void ExplainModel::takeAdvice() {
  suggestions_ = {};
  suggestions_ready_ = false;
  if (!job_ready_) return;
  if (!job_.none_reason.isEmpty()) {
    // Nothing to simulate: no report will bring advice.
    suggestions_.none_reason = job_.none_reason;
    suggestions_ready_ = true;
    return;
  }
  if (!result_.report || result_job_generation_ != job_generation_) return;  // the report with this job is coming
  const ExplainReport& x = *result_.report;
  suggestions_ready_ = true;
  if (!x.explained) {
    suggestions_.none_reason = x.notes.empty() ? tr("the run has no complete iteration yet")
                                               : QString::fromStdString(x.notes.back());
    return;
  }
  suggestions_.report = x.advice;
  suggestions_.model_error = x.model_error;
  for (const auto& n : x.notes)
    if (n.rfind("predicted vs measured:", 0) != 0) suggestions_.notes.push_back(n);
  if (x.advice.suggestions.empty())
    suggestions_.none_reason = x.model_error >= 0
                                   ? tr("none whose simulated gain exceeds the model's error on this run (%1%)")
                                         .arg(100 * x.model_error, 0, 'f', 1)
                                   : tr("no simulated change shortens the iteration");
}

void ExplainModel::setPredictionLoader(std::function<PredictionSource()> load) {
  prediction_ = {};
  prediction_ready_ = false;
  prediction_pending_ = true;
  emit predictionAvailabilityChanged();
  prediction_load_.setFuture(QtConcurrent::run([load = std::move(load)] {
    try {
      return load();
    } catch (const std::exception& e) {
      return PredictionSource{nullptr, QObject::tr("the run's job, profile or plan could not be read: %1").arg(QString::fromStdString(e.what()))};
    }
  }));
}

void ExplainModel::clearPrediction(const QString& none_reason) {
  setPredictionLoader([none_reason] { return PredictionSource{nullptr, none_reason}; });
}

void ExplainModel::onPredictionLoaded() {
  if (!prediction_pending_ || !prediction_load_.isFinished()) return;
  prediction_pending_ = false;
  prediction_ = prediction_load_.future().result();
  prediction_ready_ = true;
  emit predictionAvailabilityChanged();
  recompute();  // the report's prediction (the model's error) and, when shown, the timeline's
}

void ExplainModel::setShowPredicted(bool on) {
  if (on == show_predicted_) return;
  show_predicted_ = on;
  recompute();
}

std::vector<IdleInterval> ExplainModel::intervalsOf(IdleCause cause, int stage) const {
  std::vector<IdleInterval> out;
  for (const auto& i : result_.intervals)
    if (i.cause == cause && (stage < 0 || i.stage == stage)) out.push_back(i);
  return out;
}

void ExplainModel::waitIdle() {
  for (;;) {
    if (prediction_pending_) {
      prediction_load_.waitForFinished();
      onPredictionLoaded();
      continue;
    }
    if (suggest_pending_) {
      suggest_.waitForFinished();
      onJobLoaded();
      continue;
    }
    if (compute_pending_) {
      compute_.waitForFinished();
      onComputed();
      continue;
    }
    if (dirty_ || (run_ && run_->revision() != computed_revision_)) {
      startCompute();
      if (compute_pending_) continue;
    }
    return;
  }
}

}  // namespace pw::gui
