// The explain report (core/analysis/explain_report.h): computed once for
// `pipewright explain` and the studio's Explain dock. Its advice is core's
// rule applied to the model's error on these very events, so a run the
// simulator misjudged gets fewer suggestions than the simulator alone offers.
#include <gtest/gtest.h>

#include "core/analysis/explain_report.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"

namespace pw {
namespace {

// Four stages, two microbatches: a large bubble, so more microbatches and
// other planners win back a lot, and some win back little.
nlohmann::json job_doc() {
  return nlohmann::json::parse(R"({"name": "r", "model": {"kind": "gpt", "layers": 16, "hidden": 1024,
      "seq_len": 256}, "training": {"batch_size": 16, "microbatch_size": 8, "clip_grad_norm": 0},
      "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})");
}

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

struct Recorded {
  std::vector<Event> events;
  ExplainSources sources;
};

// The job simulated, its events stretched by `slow` (a run the model
// under-predicted by that factor), with the job, profile and plan it recorded.
Recorded record(double slow) {
  const nlohmann::json doc = job_doc();
  PreparedJob p = prepare_job(parse_job(doc));
  Collect c;
  simulate(p.sim_input(), &c);
  for (auto& e : c.events) {
    e.start_ns = static_cast<std::int64_t>(e.start_ns * slow);
    e.end_ns = static_cast<std::int64_t>(e.end_ns * slow);
  }
  Recorded r;
  r.events = std::move(c.events);
  r.sources.job = doc;
  auto in = std::make_shared<PredictionInputs>();
  in->job = parse_job(doc);
  in->profile = p.profile;
  in->plans.push_back({0, 1, p.plan});
  r.sources.prediction = std::move(in);
  return r;
}

double gain(const Suggestion& s) { return 1.0 - s.iteration_ms_after / s.iteration_ms_before; }

TEST(ExplainReport, ASimulatedRunIsItsOwnPredictionAndGetsTheSimulatorsAdvice) {
  const Recorded r = record(1.0);
  const ExplainReport x = explain_report(r.events, r.sources);
  ASSERT_TRUE(x.explained);
  EXPECT_EQ(x.iterations, 1);
  EXPECT_EQ(x.iteration, 0);
  ASSERT_TRUE(x.prediction);
  EXPECT_NEAR(x.model_error, 0.0, 1e-6);
  EXPECT_EQ(x.stages().size(), 4u);
  EXPECT_GT(x.critical_path.length_ns(), 0);
  const SuggestionReport core = suggest_changes(r.sources.job, 5, x.model_error);
  ASSERT_FALSE(core.suggestions.empty());
  ASSERT_EQ(x.advice.suggestions.size(), core.suggestions.size());
  for (std::size_t i = 0; i < core.suggestions.size(); ++i)
    EXPECT_EQ(x.advice.suggestions[i].change, core.suggestions[i].change);
}

TEST(ExplainReport, AdviceWithinTheModelsErrorOnTheRunIsWithheld) {
  const Recorded r = record(1.3);
  const ExplainReport x = explain_report(r.events, r.sources);
  ASSERT_TRUE(x.explained);
  ASSERT_TRUE(x.prediction);
  ASSERT_GT(x.model_error, 0.1) << "stretched 1.3x, the model is well off";
  // Exactly the rule: every simulated improvement whose gain exceeds the
  // error, best first, at most five; the others named in the notes.
  const SuggestionReport all = simulate_suggestions(r.sources.job);
  std::vector<std::string> want, withheld;
  for (const auto& s : all.suggestions) (gain(s) > x.model_error + 1e-9 ? want : withheld).push_back(s.change);
  if (want.size() > 5) want.resize(5);
  ASSERT_FALSE(withheld.empty()) << "the case must exercise the rule";
  std::vector<std::string> got;
  for (const auto& s : x.advice.suggestions) got.push_back(s.change);
  EXPECT_EQ(got, want);
  EXPECT_EQ(x.advice.withheld, static_cast<int>(withheld.size()));
  for (const auto& w : withheld) {
    bool named = false;
    for (const auto& n : x.notes) named = named || n.rfind(w + ": withheld", 0) == 0;
    EXPECT_TRUE(named) << w;
  }
  // Simulated once elsewhere (the studio caches the candidates): the same advice.
  ExplainSources cached = r.sources;
  cached.simulated = std::make_shared<const SuggestionReport>(all);
  cached.job = nullptr;  // not simulated again: the candidates are given
  const ExplainReport y = explain_report(r.events, cached);
  ASSERT_EQ(y.advice.suggestions.size(), x.advice.suggestions.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(y.advice.suggestions[i].change, got[i]);
  EXPECT_EQ(y.notes, x.notes);
}

TEST(ExplainReport, WithoutARecordedPredictionTheAdviceIsUncheckedAndSaysSo) {
  Recorded r = record(1.3);
  r.sources.prediction = nullptr;
  r.sources.prediction_none = "the run recorded no profile";
  const ExplainReport x = explain_report(r.events, r.sources);
  ASSERT_TRUE(x.explained);
  EXPECT_FALSE(x.prediction);
  EXPECT_LT(x.model_error, 0);
  EXPECT_FALSE(x.advice.suggestions.empty());
  bool unknown = false, why = false;
  for (const auto& n : x.notes) {
    unknown = unknown || n.find("unknown") != std::string::npos;
    why = why || n == "predicted vs measured: the run recorded no profile";
  }
  EXPECT_TRUE(unknown);
  EXPECT_TRUE(why);
}

TEST(ExplainReport, NoJobNoSuggestionsAndAnIterationOutOfRangeIsNotExplained) {
  Recorded r = record(1.0);
  r.sources.job = nullptr;
  ExplainReport x = explain_report(r.events, r.sources);
  ASSERT_TRUE(x.explained);
  EXPECT_TRUE(x.advice.suggestions.empty());
  EXPECT_NE(std::find(x.notes.begin(), x.notes.end(), "suggestions: the run recorded no job"), x.notes.end());

  ExplainReportOptions opt;
  opt.iteration = 3;
  x = explain_report(r.events, r.sources, opt);
  EXPECT_FALSE(x.explained);
  EXPECT_EQ(x.iterations, 1);
  EXPECT_EQ(x.iteration, 3);
  opt.suggestions = false;
  opt.iteration.reset();
  x = explain_report(r.events, record(1.0).sources, opt);
  EXPECT_TRUE(x.advice.suggestions.empty());
  EXPECT_FALSE(x.suggestions_asked);
}

}  // namespace
}  // namespace pw
