// The predicted timeline under the measured one (docs/explain.md): the
// alignment at iteration starts on hand-worked event sets (expected events
// written out by hand), and a recorded run predicted per plan, its first
// divergence placed where the measured run was delayed on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "core/analysis/predicted_timeline.h"
#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "core/spec/job_spec.h"

using namespace pw;

namespace {

Event ev(int stage, EventKind k, std::int64_t a, std::int64_t b, int mb = 0) {
  Event e;
  e.stage = stage;
  e.kind = k;
  e.start_ns = a;
  e.end_ns = b;
  e.microbatch = k == EventKind::OptimizerStep ? -1 : mb;
  e.first_layer = e.last_layer = stage;
  return e;
}
constexpr auto F = EventKind::Forward;
constexpr auto B = EventKind::Backward;
constexpr auto O = EventKind::OptimizerStep;
constexpr auto S = EventKind::Send;

// One iteration of two stages and one microbatch, starting at t:
//   stage 0: F [t, t+10)  B [t+30, t+40)  step [t+40, t+50)
//   stage 1: F [t+10, t+20)  B [t+20, t+30)  step [t+30, t+35)
std::vector<Event> iteration(std::int64_t t, std::int64_t stage1_backward = 10) {
  const std::int64_t d = stage1_backward - 10;
  return {ev(0, F, t, t + 10),          ev(1, F, t + 10, t + 20),          ev(1, B, t + 20, t + 30 + d),
          ev(1, O, t + 30 + d, t + 35 + d), ev(0, B, t + 30 + d, t + 40 + d), ev(0, O, t + 40 + d, t + 50 + d)};
}

using Key = std::tuple<int, std::int64_t, std::int64_t, int, int>;  // stage, start, end, kind, microbatch
std::vector<Key> keys(const std::vector<Event>& v) {
  std::vector<Key> k;
  for (const auto& e : v) k.emplace_back(e.stage, e.start_ns, e.end_ns, static_cast<int>(e.kind), e.microbatch);
  return k;
}
std::vector<Key> sorted_keys(std::vector<Event> v) {
  auto k = keys(v);
  std::sort(k.begin(), k.end());
  return k;
}

}  // namespace

TEST(PredictedTimeline, IterationStartsAreEachIterationsFirstCompute) {
  // Three measured iterations at 100, 160 and 230; the second's stage-1
  // backward takes 20 instead of 10 (its iteration ends at 220).
  std::vector<Event> m = iteration(100);
  for (auto& e : iteration(160, 20)) m.push_back(e);
  for (auto& e : iteration(230)) m.push_back(e);
  const Attribution a = attribute_idle(m);
  ASSERT_EQ(a.iterations, 3);
  EXPECT_EQ(iteration_starts(m, a), (std::vector<std::int64_t>{100, 160, 230}));
}

TEST(PredictedTimeline, OnePredictedIterationIsLaidUnderEveryMeasuredOne) {
  // The prediction starts at 7 (its first forward), with a send on the link.
  std::vector<Event> p = iteration(7);
  p.push_back(ev(0, S, 17, 19));
  const Attribution pa = attribute_idle(p);
  ASSERT_EQ(pa.iterations, 1);
  const auto aligned = align_predicted_to_measured(p, pa, {100, 160, 230});
  // By hand: iteration k's copy shifted by start_k - 7, by stage then start.
  std::vector<Key> want;
  for (std::int64_t t : {100, 160, 230}) {
    want.push_back({0, t, t + 10, static_cast<int>(F), 0});
    want.push_back({0, t + 10, t + 12, static_cast<int>(S), 0});
    want.push_back({0, t + 30, t + 40, static_cast<int>(B), 0});
    want.push_back({0, t + 40, t + 50, static_cast<int>(O), -1});
  }
  for (std::int64_t t : {100, 160, 230}) {
    want.push_back({1, t + 10, t + 20, static_cast<int>(F), 0});
    want.push_back({1, t + 20, t + 30, static_cast<int>(B), 0});
    want.push_back({1, t + 30, t + 35, static_cast<int>(O), -1});
  }
  EXPECT_EQ(keys(aligned), want);
}

TEST(PredictedTimeline, MeasuredIterationsBeyondThePredictionGetItsLast) {
  // Two predicted iterations (as PipeDream's: warm-up, then steady state)
  // of different shapes, and a forward after stage 0's last step, outside
  // every complete iteration: left out.
  std::vector<Event> p = iteration(0);         // iteration 0, starts at 0
  for (auto& e : iteration(50, 30)) p.push_back(e);  // iteration 1, starts at 50, ends at 120
  p.push_back(ev(0, F, 121, 125, 1));
  const Attribution pa = attribute_idle(p);
  ASSERT_EQ(pa.iterations, 2);
  EXPECT_EQ(matching_predicted_iteration(0, 2), 0);
  EXPECT_EQ(matching_predicted_iteration(1, 2), 1);
  EXPECT_EQ(matching_predicted_iteration(5, 2), 1);
  EXPECT_EQ(matching_predicted_iteration(3, 1), 0);
  const auto aligned = align_predicted_to_measured(p, pa, {1000, 2000, 3000});
  // Measured 0 gets predicted 0 at 1000; measured 1 and 2 predicted 1 (its
  // slow stage-1 backward), shifted by 2000 - 50 and 3000 - 50.
  std::vector<Event> want = iteration(1000);
  for (auto& e : iteration(2000, 30)) want.push_back(e);
  for (auto& e : iteration(3000, 30)) want.push_back(e);
  EXPECT_EQ(keys(aligned), sorted_keys(want));
  for (const auto& e : aligned) EXPECT_NE(e.start_ns, 121 + 950) << "the incomplete iteration's forward";
  EXPECT_TRUE(align_predicted_to_measured(p, pa, {}).empty());
}

TEST(PredictedTimeline, ManyIterationsArePooledIntoMeans) {
  const std::vector<Event> p = iteration(0);  // 50 long
  const Attribution pa = attribute_idle(p);
  // Measured: a warm-up (stage 1's backward 30: 70 long), then 50, then 60
  // (stage 1's backward 20).
  std::vector<Event> m = iteration(100, 30);
  for (auto& e : iteration(200)) m.push_back(e);
  for (auto& e : iteration(300, 20)) m.push_back(e);
  const Attribution ma = attribute_idle(m);
  ASSERT_EQ(ma.iterations, 3);
  const PredictionDiff d = pool_predictions(m, ma, p, pa, {{1, 0}, {2, 0}});
  EXPECT_EQ(d.iterations, 2);
  EXPECT_EQ(d.measured_iteration_ns, 55);  // (50 + 60) / 2
  EXPECT_EQ(d.predicted_iteration_ns, 50);
  ASSERT_EQ(d.kinds.size(), 6u);
  for (const auto& k : d.kinds) {
    const double want = k.kind == O ? (k.stage == 0 ? 10 : 5) : (k.stage == 1 && k.kind == B ? 15 : 10);
    EXPECT_NEAR(k.measured_ms, want / 1e6, 1e-15) << k.stage << " " << to_string(k.kind);
    EXPECT_EQ(k.measured_count, 2);
    EXPECT_EQ(k.predicted_count, 2);
  }
  EXPECT_FALSE(d.divergence);
  // By hand: the mean is 10% over, the actions |15 - 10| x 2 of 120 off.
  EXPECT_NEAR(model_error(d), 0.1, 1e-12);
  // One pair is that iteration's comparison.
  const PredictionDiff one = pool_predictions(m, ma, p, pa, {{2, 0}});
  const PredictionDiff direct = compare_prediction(m, ma, 2, p, pa, 0);
  EXPECT_EQ(one.measured_iteration_ns, direct.measured_iteration_ns);
  EXPECT_NEAR(model_error(one), 0.2, 1e-12);
  EXPECT_NEAR(model_error(direct), 0.2, 1e-12);
  EXPECT_EQ(pool_predictions(m, ma, p, pa, {}).iterations, 0);
}

namespace {

JobSpec uniform_job() {
  return parse_job(nlohmann::json::parse(R"({"name": "u", "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 1, "param_mb": 1, "output_mb": 1}, "training": {"batch_size": 8,
      "microbatch_size": 2}, "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
}

// A plan of the job with other stage sizes than uniform's 2-2-2-2.
Plan uneven_plan(const Plan& base) {
  Plan p = base;
  p.stages = {{0, 2}, {3, 4}, {5, 6}, {7, 7}};
  return p;
}

// Stage 2's compute actions and steps in `events` by start; from its second
// on, each made D late (kept in order). Returns the second as it was.
Event delay_stage2_after_its_first(std::vector<Event>& events, std::int64_t D) {
  std::vector<Event*> stage2;
  for (auto& e : events)
    if (e.stage == 2 && (e.kind == F || e.kind == B || e.kind == O)) stage2.push_back(&e);
  std::sort(stage2.begin(), stage2.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  EXPECT_GE(stage2.size(), 3u);
  if (stage2.size() < 2) return {};
  const Event second = *stage2[1];
  for (std::size_t i = 1; i < stage2.size(); ++i) stage2[i]->start_ns += D, stage2[i]->end_ns += D;
  return second;
}

// `events` shifted by dt (a copy).
std::vector<Event> shifted(std::vector<Event> events, std::int64_t dt) {
  for (auto& e : events) e.start_ns += dt, e.end_ns += dt;
  return events;
}

}  // namespace

TEST(PredictedTimeline, RecordedRunPredictedPerPlanWithItsFirstDivergence) {
  const JobSpec job = uniform_job();
  PreparedJob prepared = prepare_job(job);
  // An optimizer step per stage delimits the iterations.
  for (auto& l : prepared.profile.layers) l.optimizer_ms = 0.5;
  const Plan v1 = prepared.plan, v2 = uneven_plan(prepared.plan);
  const PlanPrediction p1 = predict_plan(job, prepared.profile, v1), p2 = predict_plan(job, prepared.profile, v2);
  ASSERT_EQ(p1.attribution.iterations, 1);
  ASSERT_EQ(p2.attribution.iterations, 1);
  auto span = [](const std::vector<Event>& v) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& e : v) lo = std::min(lo, e.start_ns), hi = std::max(hi, e.end_ns);
    return std::make_pair(lo, hi);
  };
  const auto [lo1, hi1] = span(p1.events);
  const auto [lo2, hi2] = span(p2.events);
  ASSERT_EQ(lo1, 0);
  ASSERT_EQ(lo2, 0);
  // "Measured": v1's iteration at 0 and at G, then v2's (replanned at 2G) at 2G;
  // in the second, stage 2's second compute action starts D late, and so
  // does everything after it on stage 2 (kept in order).
  const std::int64_t G = hi1 + hi2 + 1'000'000, D = 3'000'000;
  std::vector<Event> late = p1.events;
  const Event second = delay_stage2_after_its_first(late, D);
  std::vector<Event> measured = p1.events;
  for (auto& e : shifted(late, G)) measured.push_back(e);
  for (auto& e : shifted(p2.events, 2 * G)) measured.push_back(e);
  const Attribution ma = attribute_idle(measured);
  ASSERT_EQ(ma.iterations, 3);
  ASSERT_EQ(iteration_starts(measured, ma), (std::vector<std::int64_t>{0, G, 2 * G}));

  PredictionInputs in;
  in.job = job;
  in.profile = prepared.profile;
  in.plans = {{0, 1, v1}, {2 * G, 2, v2}};
  const PredictedTimeline t = predict_timeline(measured, ma, in, 1, 1'000'000);
  // Every iteration's prediction, from its own plan, at its start.
  std::vector<Event> want = p1.events;
  for (auto& e : shifted(p1.events, G)) want.push_back(e);
  for (auto& e : shifted(p2.events, 2 * G)) want.push_back(e);
  EXPECT_EQ(keys(t.events), sorted_keys(want));
  // Iteration 1: plan 1, the delayed action is the first divergence.
  EXPECT_EQ(t.iteration, 1);
  EXPECT_EQ(t.plan_version, 1);
  ASSERT_TRUE(t.mark);
  EXPECT_EQ(t.mark->divergence.stage, 2);
  EXPECT_EQ(t.mark->divergence.index, 1);
  EXPECT_EQ(t.mark->divergence.kind, second.kind);
  EXPECT_EQ(t.mark->divergence.microbatch, second.microbatch);
  EXPECT_EQ(t.mark->measured_start_ns, G + second.start_ns + D);
  EXPECT_EQ(t.mark->measured_end_ns, G + second.end_ns + D);
  EXPECT_EQ(t.mark->predicted_start_ns, G + second.start_ns);
  EXPECT_EQ(t.mark->predicted_end_ns, G + second.end_ns);
  // Iteration 0 is the prediction itself; iteration 2 is plan 2's, exactly.
  const PredictedTimeline t0 = predict_timeline(measured, ma, in, 0, 1'000'000, false);
  EXPECT_FALSE(t0.mark);
  EXPECT_TRUE(t0.events.empty());
  const PredictedTimeline t2 = predict_timeline(measured, ma, in, 2, 1'000'000, false);
  EXPECT_EQ(t2.plan_version, 2);
  EXPECT_FALSE(t2.mark);
  EXPECT_EQ(t2.diff.predicted_iteration_ns, t2.diff.measured_iteration_ns);
}

TEST(PredictedTimeline, InputsNameWhatTheRunDidNotRecord) {
  std::string why;
  const JobSpec job = uniform_job();
  PreparedJob prepared = prepare_job(job);
  EXPECT_FALSE(prediction_inputs(nullptr, nlohmann::json::object(), {{0, 1, prepared.plan}}, &why));
  EXPECT_EQ(why, "the run recorded no job");
  EXPECT_FALSE(prediction_inputs(job.raw, nullptr, {{0, 1, prepared.plan}}, &why));
  EXPECT_EQ(why, "the run recorded no profile");
  EXPECT_FALSE(prediction_inputs(job.raw, nlohmann::json::object(), {}, &why));
  EXPECT_EQ(why, "the run recorded no plan");
  // Plans recorded out of order are put in time order; before the first
  // plan, the first is in force.
  auto in = prediction_inputs(job.raw, profile_to_json(prepared.profile),
                              {{50, 2, uneven_plan(prepared.plan)}, {10, 1, prepared.plan}}, &why);
  ASSERT_TRUE(in);
  EXPECT_EQ(plan_at(in->plans, 0).version, 1);
  EXPECT_EQ(plan_at(in->plans, 49).version, 1);
  EXPECT_EQ(plan_at(in->plans, 50).version, 2);
  EXPECT_EQ(in->job.name, "u");
}

TEST(PredictedTimeline, AdviceIsJudgedOnThePlansIterationsNotOne) {
  // Four iterations of one plan: the first slow (a warm-up, every stage-2
  // action after its first D late), the others exactly as predicted, the
  // last one explained. The model's error on the run is 0 (the warm-up left
  // out); on the warm-up alone it is not.
  const JobSpec job = uniform_job();
  PreparedJob prepared = prepare_job(job);
  for (auto& l : prepared.profile.layers) l.optimizer_ms = 0.5;  // steps delimit the iterations
  const PlanPrediction p = predict_plan(job, prepared.profile, prepared.plan);
  std::int64_t hi = 0;
  for (const auto& e : p.events) hi = std::max(hi, e.end_ns);
  // D: long enough to outlast stage 0's drain, so the warm-up is longer.
  const std::int64_t G = 2 * hi + 1'000'000, D = hi / 2;
  std::vector<Event> measured = p.events;
  delay_stage2_after_its_first(measured, D);
  for (int k = 1; k < 4; ++k)
    for (auto& e : shifted(p.events, k * G)) measured.push_back(e);
  const Attribution ma = attribute_idle(measured);
  ASSERT_EQ(ma.iterations, 4);
  PredictionInputs in;
  in.job = job;
  in.profile = prepared.profile;
  in.plans = {{0, 1, prepared.plan}};
  const PredictedTimeline t = predict_timeline(measured, ma, in, 3, 1'000'000, false);
  EXPECT_EQ(t.plan_diff.iterations, 3);
  EXPECT_EQ(t.plan_diff.measured_iteration_ns, t.plan_diff.predicted_iteration_ns);
  EXPECT_NEAR(model_error_on_run(t), 0.0, 1e-12);
  const PredictedTimeline t0 = predict_timeline(measured, ma, in, 0, 1'000'000, false);
  EXPECT_GT(model_error(t0.diff), 0.01);
  EXPECT_NEAR(model_error_on_run(t0), 0.0, 1e-12) << "the same plan's iterations, whichever is explained";
  // An iteration the run does not have pools nothing (and says so).
  const PredictedTimeline none = predict_timeline(measured, ma, in, 99, 1'000'000, false);
  EXPECT_EQ(none.plan_diff.iterations, 0);
  EXPECT_EQ(model_error_on_run(none), model_error(none.diff));
  // A plan with one iteration is judged on it.
  in.plans = {{0, 1, prepared.plan}, {G, 2, prepared.plan}};
  const PredictedTimeline w = predict_timeline(measured, ma, in, 0, 1'000'000, false);
  EXPECT_EQ(w.plan_diff.iterations, 1);
  EXPECT_NEAR(model_error_on_run(w), model_error(w.diff), 1e-12);
  EXPECT_GT(model_error_on_run(w), 0.01);
}
