#include <gtest/gtest.h>

#include <random>

#include "core/spec/job_spec.h"
#include "gui/models/range_stats.h"
#include "gui/models/run_model.h"
#include "gui/models/simulated_run_source.h"

namespace pw::gui {
namespace {

// Independent computation straight from the event list: clip every event
// to the window, no tracks, no binary search.
struct Expect {
  std::vector<std::int64_t> busy;
  std::array<std::int64_t, kEventKindCount> kind{};
};
Expect brute(const std::vector<Event>& ev, int stages, std::int64_t t0, std::int64_t t1) {
  Expect x;
  x.busy.assign(stages, 0);
  for (const auto& e : ev) {
    std::int64_t a = std::max(e.start_ns, t0), b = std::min(e.end_ns, t1);
    if (b <= a) continue;
    x.kind[static_cast<int>(e.kind)] += b - a;
    if (e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::BackwardInput ||
        e.kind == EventKind::BackwardWeight || e.kind == EventKind::Recompute || e.kind == EventKind::OptimizerStep ||
        e.kind == EventKind::Migrate)
      x.busy[e.stage] += b - a;
  }
  return x;
}

JobSpec four_stage_gpt() {
  return parse_job(nlohmann::json::parse(R"({"name": "g", "model": {"kind": "gpt", "layers": 16, "hidden": 1024,
      "seq_len": 256}, "training": {"batch_size": 16, "microbatch_size": 2},
      "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
}

TEST(RangeStats, ModelWholeRunBubbleMatchesAScanArrivingInBatches) {
  // The model's running busy totals (Compare's summary reads them on every
  // live tick) must agree with scanning the whole run.
  JobSpec job = four_stage_gpt();
  RunBatch all = simulate_run(job, {.iterations = 3});
  RunModel m;
  EXPECT_EQ(m.bubbleFraction(), 0);
  for (std::size_t i = 0; i < all.events.size(); i += 97) {
    RunBatch part;
    part.events.assign(all.events.begin() + static_cast<std::ptrdiff_t>(i),
                       all.events.begin() + static_cast<std::ptrdiff_t>(std::min(all.events.size(), i + 97)));
    m.append(part);
    if (i % (97 * 7) == 0)
      ASSERT_NEAR(m.bubbleFraction(), range_stats(m, m.beginNs(), m.endNs()).bubble_fraction, 1e-12) << i;
  }
  const Expect x = brute(all.events, 4, m.beginNs(), m.endNs());
  for (int s = 0; s < 4; ++s) EXPECT_EQ(m.busyNs(s), x.busy[s]) << s;
  EXPECT_GT(m.bubbleFraction(), 0.01);
  EXPECT_NEAR(m.bubbleFraction(), range_stats(m, m.beginNs(), m.endNs()).bubble_fraction, 1e-12);
  m.clear();
  EXPECT_EQ(m.bubbleFraction(), 0);
}

TEST(RangeStats, MatchesBruteForceOnRandomWindows) {
  JobSpec job = four_stage_gpt();
  RunBatch b = simulate_run(job, {.iterations = 3});
  RunModel m;
  m.append(b);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::int64_t span = m.endNs() - m.beginNs();
    std::int64_t t0 = m.beginNs() + static_cast<std::int64_t>(rng() % span);
    std::int64_t t1 = t0 + 1 + static_cast<std::int64_t>(rng() % (span / 3));
    RangeStats r = range_stats(m, t0, t1);
    Expect x = brute(b.events, 4, t0, t1);
    std::int64_t busy = 0;
    for (int s = 0; s < 4; ++s) {
      ASSERT_EQ(r.stages[s].busy_ns, x.busy[s]) << "stage " << s << " trial " << trial;
      busy += x.busy[s];
    }
    for (int k = 0; k < kEventKindCount; ++k) ASSERT_EQ(r.kind_ns[k], x.kind[k]) << to_string(static_cast<EventKind>(k));
    EXPECT_NEAR(r.busy_fraction, static_cast<double>(busy) / (4.0 * (t1 - t0)), 1e-12);
    EXPECT_NEAR(r.bubble_fraction, 1 - r.busy_fraction, 1e-12);
  }
}

TEST(RangeStats, OneIterationBubbleMatchesClosedForm) {
  // Uniform stages, no transfers (output 0): 1F1B bubble = (p-1)/(m+p-1).
  JobSpec job = parse_job(nlohmann::json::parse(R"({"name": "u", "model": {"kind": "uniform", "layers": 8, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 1, "param_mb": 0}, "training": {"batch_size": 12, "microbatch_size": 1,
      "optimizer": "sgd"}, "cluster": {"devices": 4, "device": "v100-32g"}, "pipeline": {"stages": 4}})"));
  RunModel m;
  m.append(simulate_run(job, {.iterations = 1}));
  RangeStats r = range_stats(m, m.beginNs(), m.endNs());
  double p = 4, mb = 12;
  EXPECT_NEAR(r.bubble_fraction, (p - 1) / (mb + p - 1), 0.01);
  EXPECT_EQ(r.microbatches_completed, 12);
}

}  // namespace
}  // namespace pw::gui
