#include <gtest/gtest.h>

#include <QSignalSpy>

#include <algorithm>
#include <tuple>

#include "core/events/event_kinds.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "gui/models/explain_model.h"
#include "gui/models/job_model.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_iteration.h"
#include "gui/models/simulated_run_source.h"

namespace pw::gui {
namespace {

nlohmann::json four_stage_doc() {
  return nlohmann::json::parse(R"({"name": "g", "model": {"kind": "gpt", "layers": 16, "hidden": 1024,
      "seq_len": 256}, "training": {"batch_size": 16, "microbatch_size": 2, "clip_grad_norm": 0},
      "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})");
}

Event ev(int stage, EventKind k, std::int64_t t0, std::int64_t t1, int mb, int layer) {
  Event e;
  e.stage = stage;
  e.kind = k;
  e.start_ns = t0;
  e.end_ns = t1;
  e.microbatch = mb;
  e.first_layer = e.last_layer = layer;
  return e;
}

// Two stages, one microbatch, worked by hand (docs/explain.md's causes):
//   stage 0: F [0,10)  waits for stage 1's gradient [10,30)  B [30,40)  step [40,50)
//   stage 1: waits for the activation [0,10)  F [10,20)  B [20,30)  step [30,35)
// Stage 0's gradient wait precedes its first backward (the turnaround):
// fill. Stage 1 waits [0,10) before its first forward: fill; after its step
// it drains for as long as the last backward ends after its own (40 - 30 =
// 10: [35,45)), then waits for stage 0's longer step [45,50): imbalance.
std::vector<Event> two_stage_by_hand() {
  return {ev(0, EventKind::Forward, 0, 10, 0, 0),       ev(1, EventKind::Forward, 10, 20, 0, 1),
          ev(1, EventKind::Backward, 20, 30, 0, 1),     ev(1, EventKind::OptimizerStep, 30, 35, -1, -1),
          ev(0, EventKind::Backward, 30, 40, 0, 0),     ev(0, EventKind::OptimizerStep, 40, 50, -1, -1)};
}

RunModel& load(RunModel& m, const std::vector<Event>& events) {
  RunBatch b;
  b.events = events;
  m.append(b);
  return m;
}

int ci(IdleCause c) { return static_cast<int>(c); }

TEST(ExplainModel, HandWorkedTwoStageRunPerCause) {
  RunModel run;
  load(run, two_stage_by_hand());
  ExplainModel m;
  QSignalSpy updated(&m, &ExplainModel::updated);
  m.setRun(&run);
  m.waitIdle();
  EXPECT_GE(updated.count(), 1);
  const ExplainResult& r = m.result();
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.iterations, 1);
  const auto& s0 = r.stages[0];
  EXPECT_EQ(s0.wall_ns, 50);
  EXPECT_EQ(s0.compute_ns, 20);
  EXPECT_EQ(s0.cause_ns[ci(IdleCause::Fill)], 20);
  EXPECT_EQ(s0.cause_ns[ci(IdleCause::Optimizer)], 10);
  const auto& s1 = r.stages[1];
  EXPECT_EQ(s1.wall_ns, 50);
  EXPECT_EQ(s1.compute_ns, 20);
  EXPECT_EQ(s1.cause_ns[ci(IdleCause::Fill)], 10);
  EXPECT_EQ(s1.cause_ns[ci(IdleCause::Optimizer)], 5);
  EXPECT_EQ(s1.cause_ns[ci(IdleCause::Drain)], 10);
  EXPECT_EQ(s1.cause_ns[ci(IdleCause::Imbalance)], 5);
  for (const auto& s : r.stages) {
    std::int64_t sum = s.compute_ns;
    for (auto c : s.cause_ns) sum += c;
    EXPECT_EQ(sum, s.wall_ns) << s.stage;
  }
}

TEST(ExplainModel, HighlightSelectsExactlyTheCausesIntervals) {
  RunModel run;
  load(run, two_stage_by_hand());
  ExplainModel m;
  m.setRun(&run);
  m.waitIdle();
  auto fill = m.intervalsOf(IdleCause::Fill);
  ASSERT_EQ(fill.size(), 2u);
  EXPECT_EQ(fill[0].stage, 0);
  EXPECT_EQ(fill[0].start_ns, 10);
  EXPECT_EQ(fill[0].end_ns, 30);
  EXPECT_TRUE(fill[0].gradient);
  EXPECT_EQ(fill[0].peer, 1);
  EXPECT_EQ(fill[1].stage, 1);
  EXPECT_EQ(fill[1].start_ns, 0);
  EXPECT_EQ(fill[1].end_ns, 10);
  EXPECT_FALSE(fill[1].gradient);
  EXPECT_EQ(fill[1].peer, 0);
  auto fill1 = m.intervalsOf(IdleCause::Fill, 1);
  ASSERT_EQ(fill1.size(), 1u);
  EXPECT_EQ(fill1[0].start_ns, 0);
  auto drain = m.intervalsOf(IdleCause::Drain);
  ASSERT_EQ(drain.size(), 1u);
  EXPECT_EQ(drain[0].stage, 1);
  EXPECT_EQ(drain[0].start_ns, 35);
  EXPECT_EQ(drain[0].end_ns, 45);
  auto imb = m.intervalsOf(IdleCause::Imbalance);
  ASSERT_EQ(imb.size(), 1u);
  EXPECT_EQ(imb[0].stage, 1);
  EXPECT_EQ(imb[0].start_ns, 45);
  EXPECT_EQ(imb[0].end_ns, 50);
  EXPECT_TRUE(m.intervalsOf(IdleCause::Dependency).empty());
  EXPECT_TRUE(m.intervalsOf(IdleCause::Drain, 0).empty());
}

TEST(ExplainModel, SimulatedRunEqualsCoreAttributionAndTheHighlightTilesEachCause) {
  RunBatch all = simulate_run(parse_job(four_stage_doc()), {.iterations = 3});
  RunModel run;
  // In pieces, as a live run arrives; the model follows every change.
  ExplainModel m;
  m.setRun(&run);
  const std::size_t half = all.events.size() / 2;
  RunBatch a, b;
  a.events.assign(all.events.begin(), all.events.begin() + static_cast<std::ptrdiff_t>(half));
  b.events.assign(all.events.begin() + static_cast<std::ptrdiff_t>(half), all.events.end());
  run.append(a);
  m.waitIdle();
  run.append(b);
  m.waitIdle();

  Attribution core = attribute_idle(all.events);
  ASSERT_EQ(core.iterations, 3);
  const ExplainResult& r = m.result();
  EXPECT_EQ(r.iterations, 3);
  ASSERT_EQ(static_cast<int>(r.stages.size()), core.stages);
  for (int s = 0; s < core.stages; ++s) {
    std::int64_t wall = 0, compute = 0;
    std::array<std::int64_t, kIdleCauseCount> causes{};
    for (const auto& si : core.stage_iterations)
      if (si.stage == s) {
        wall += si.wall_ns();
        compute += si.compute_ns;
        for (int c = 0; c < kIdleCauseCount; ++c) causes[c] += si.cause_ns[c];
      }
    const auto& st = r.stages[static_cast<std::size_t>(s)];
    EXPECT_EQ(st.wall_ns, wall) << s;
    EXPECT_EQ(st.compute_ns, compute) << s;
    std::int64_t sum = st.compute_ns;
    for (int c = 0; c < kIdleCauseCount; ++c) {
      EXPECT_EQ(st.cause_ns[c], causes[c]) << s << " " << to_string(static_cast<IdleCause>(c));
      sum += st.cause_ns[c];
    }
    EXPECT_EQ(sum, st.wall_ns) << s;
    // The highlighted intervals of a cause on a stage add up to its bar.
    for (int c = 0; c < kIdleCauseCount; ++c) {
      std::int64_t covered = 0;
      for (const auto& i : m.intervalsOf(static_cast<IdleCause>(c), s)) {
        EXPECT_EQ(i.stage, s);
        EXPECT_EQ(static_cast<int>(i.cause), c);
        covered += i.end_ns - i.start_ns;
      }
      EXPECT_EQ(covered, st.cause_ns[c]) << s << " " << to_string(static_cast<IdleCause>(c));
    }
  }
  // A 4-stage pipeline fills and drains.
  EXPECT_GT(r.stages[3].cause_ns[ci(IdleCause::Fill)], 0);
  EXPECT_GT(r.stages[0].cause_ns[ci(IdleCause::Drain)] + r.stages[0].cause_ns[ci(IdleCause::Fill)], 0);

  // One iteration only: core's numbers for that iteration.
  m.setIteration(1);
  m.waitIdle();
  AttributionOptions one;
  one.iteration = 1;
  Attribution core1 = attribute_idle(all.events, one);
  for (const auto& si : core1.stage_iterations) {
    const auto& st = m.result().stages[static_cast<std::size_t>(si.stage)];
    EXPECT_EQ(st.wall_ns, si.wall_ns());
    EXPECT_EQ(st.compute_ns, si.compute_ns);
    EXPECT_EQ(st.cause_ns, si.cause_ns);
  }
  run.clear();
  m.waitIdle();
  EXPECT_TRUE(m.result().stages.empty());
}

TEST(ExplainModel, SuggestionsAreCoresForTheJobAndApplyInOneChange) {
  ExplainModel m;
  m.clearJob(QStringLiteral("live runs do not publish their job"));
  m.waitIdle();
  EXPECT_TRUE(m.suggestionsReady());
  EXPECT_TRUE(m.suggestions().report.suggestions.empty());
  EXPECT_EQ(m.suggestions().none_reason, QStringLiteral("live runs do not publish their job"));

  nlohmann::json doc = four_stage_doc();
  doc["training"]["microbatch_size"] = 8;  // 2 microbatches: a large bubble to win back
  // The advice is the explain report's of a run (issue 42): a live run of
  // the job, with no recorded prediction, so the model's error is unknown
  // and nothing is withheld, as `pipewright explain` would say.
  RunModel run;
  run.append(simulate_run(parse_job(doc), {.iterations = 2}));
  m.setRun(&run);
  m.setJobLoader([doc] { return doc; }, QStringLiteral("unused"));
  m.waitIdle();
  ASSERT_TRUE(m.suggestionsReady());
  SuggestionReport core = suggest_changes(doc);
  ASSERT_FALSE(core.suggestions.empty());
  const auto& got = m.suggestions().report.suggestions;
  ASSERT_EQ(got.size(), core.suggestions.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].change, core.suggestions[i].change);
    EXPECT_EQ(got[i].overrides, core.suggestions[i].overrides);
    EXPECT_DOUBLE_EQ(got[i].iteration_ms_after, core.suggestions[i].iteration_ms_after);
    EXPECT_LT(got[i].iteration_ms_after, got[i].iteration_ms_before);
  }
  EXPECT_TRUE(m.suggestions().none_reason.isEmpty());
  EXPECT_LT(m.suggestions().model_error, 0);
  EXPECT_TRUE(std::any_of(m.suggestions().notes.begin(), m.suggestions().notes.end(),
                          [](const std::string& n) { return n.find("unknown") != std::string::npos; }));

  // Apply: the designer's document gets exactly the --set assignments, in one change.
  JobModel job;
  job.setDocument(doc);
  QSignalSpy changed(&job, &JobModel::changed);
  apply_suggestion(job, got.front());
  EXPECT_EQ(changed.count(), 1);
  nlohmann::json expect = doc;
  for (const auto& o : got.front().overrides) apply_override(expect, o);
  EXPECT_EQ(job.document(), expect);
  EXPECT_NE(job.document(), doc);
  EXPECT_TRUE(job.isValid());

  // A loader that fails says why.
  m.setJobLoader([]() -> nlohmann::json { throw std::runtime_error("no such file"); }, QString());
  m.waitIdle();
  EXPECT_TRUE(m.suggestions().none_reason.contains(QStringLiteral("no such file")));
}

// "Show predicted" (issue 21): three iterations of the simulator's own
// timeline laid at 0, G and 2G, the last with stage 2's actions after its
// first started D late. The model's predicted events are the simulated
// iteration shifted to each of those starts (worked out here, not by core),
// and the first divergence is stage 2's second action.
TEST(ExplainModel, ShowPredictedLaysThePredictionUnderEachIterationAndMarksTheDivergence) {
  const JobSpec job = parse_job(four_stage_doc());
  PreparedJob prepared = prepare_job(job);
  const SimulatedIteration it = simulate_iteration(prepared);
  // D: more than the default threshold, 5% of the predicted iteration.
  const std::int64_t G = it.period + 1'000'000, D = it.period / 8;
  std::vector<Event> measured;
  std::vector<std::tuple<int, std::int64_t, std::int64_t, int>> want;  // stage, start, end, kind
  Event second{};
  std::vector<std::size_t> stage2;
  for (int k = 0; k < 3; ++k) {
    const std::size_t first = measured.size();
    for (Event e : it.events) {
      e.start_ns += k * G, e.end_ns += k * G;
      measured.push_back(e);
      if (is_busy(e.kind) || e.kind == EventKind::Send) want.emplace_back(e.stage, e.start_ns, e.end_ns, static_cast<int>(e.kind));
    }
    if (k == 2)
      for (std::size_t i = first; i < measured.size(); ++i)
        if (measured[i].stage == 2 && (is_compute(measured[i].kind) || measured[i].kind == EventKind::OptimizerStep)) stage2.push_back(i);
  }
  std::sort(stage2.begin(), stage2.end(), [&](std::size_t a, std::size_t b) { return measured[a].start_ns < measured[b].start_ns; });
  ASSERT_GE(stage2.size(), 3u);
  second = measured[stage2[1]];
  for (std::size_t n = 1; n < stage2.size(); ++n) measured[stage2[n]].start_ns += D, measured[stage2[n]].end_ns += D;
  RunModel run;
  load(run, measured);

  ExplainModel m;
  m.setRun(&run);
  auto in = std::make_shared<PredictionInputs>();
  in->job = job;
  in->profile = prepared.profile;
  in->plans = {{0, 1, prepared.plan}};
  m.setPredictionLoader([in] { return PredictionSource{in, {}}; });
  m.waitIdle();
  EXPECT_TRUE(m.predictionReady());
  EXPECT_TRUE(m.predictionAvailable());
  EXPECT_FALSE(m.result().predicted) << "computed only while shown";
  QSignalSpy updated(&m, &ExplainModel::updated);
  m.setShowPredicted(true);
  m.waitIdle();
  EXPECT_GE(updated.count(), 1);
  ASSERT_TRUE(m.result().predicted) << m.result().predicted_error.toStdString();
  const PredictedTimeline& p = *m.result().predicted;
  std::vector<std::tuple<int, std::int64_t, std::int64_t, int>> got;
  for (const auto& e : p.events)
    if (is_busy(e.kind) || e.kind == EventKind::Send) got.emplace_back(e.stage, e.start_ns, e.end_ns, static_cast<int>(e.kind));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the prediction is the undelayed iteration at each start";
  EXPECT_EQ(p.iteration, 2);  // the last complete one
  ASSERT_TRUE(p.mark);
  EXPECT_EQ(p.mark->divergence.stage, 2);
  EXPECT_EQ(p.mark->divergence.index, 1);
  EXPECT_EQ(p.mark->divergence.microbatch, second.microbatch);
  EXPECT_EQ(p.mark->measured_start_ns, second.start_ns + D);
  EXPECT_EQ(p.mark->predicted_start_ns, second.start_ns);
  EXPECT_EQ(p.mark->predicted_end_ns, second.end_ns);

  // Hidden again: the next result carries none.
  m.setShowPredicted(false);
  m.waitIdle();
  EXPECT_FALSE(m.result().predicted);
}

TEST(ExplainModel, NoPredictionWithoutInputsSaysWhy) {
  RunModel run;
  load(run, two_stage_by_hand());
  ExplainModel m;
  m.setRun(&run);
  m.clearPrediction(QStringLiteral("the run recorded no profile"));
  m.setShowPredicted(true);
  m.waitIdle();
  EXPECT_TRUE(m.predictionReady());
  EXPECT_FALSE(m.predictionAvailable());
  EXPECT_EQ(m.predictionNoneReason(), QStringLiteral("the run recorded no profile"));
  EXPECT_FALSE(m.result().predicted);
  EXPECT_EQ(m.result().stages.size(), 2u) << "the attribution goes on";
  // A loader that throws says why too.
  m.setPredictionLoader([]() -> PredictionSource { throw std::runtime_error("database is locked"); });
  m.waitIdle();
  EXPECT_FALSE(m.predictionAvailable());
  EXPECT_TRUE(m.predictionNoneReason().contains(QStringLiteral("database is locked")));
}

}  // namespace
}  // namespace pw::gui
