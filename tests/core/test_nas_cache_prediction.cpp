// The simulator's prediction of a supernet job's device cache (what the
// trainer records next to its measured figures), against a closed form.
#include <gtest/gtest.h>

#include "core/nas/cache_prediction.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

TEST(NasCachePrediction, OneCandidateBudgetMatchesTheClosedForm) {
  // 2 stages x 1 choice layer x 3 candidates of 1 MiB (+1 MiB gradient, no
  // optimizer state), one subnet at a time (window 1), budget a third of
  // a stage's slice: each stage holds one candidate. A stage loads at the
  // first subnet and whenever its choice changes. Stage 0 can load only
  // once the previous subnet's update there unpins its candidate, which is
  // when the next forward starts: every load stalls it by one transfer.
  // Stage 1 loads the next candidate right after its own update, at least
  // two 1 ms actions before the activation arrives: no stall. Either way a
  // use that needed a load is no hit (the trainer's planned cache counts
  // hits as uses found resident from an earlier use).
  const int n = 60;
  auto doc = csptest::uniform_supernet_json(2, 2, 3, n, 1);
  doc["search_space"]["param_mb"] = 1;
  doc["search_space"]["device_budget_gb"] = 2.0 / 1024;  // 2 MiB of 6
  NasJob nj = prepare_nas_job(pw::parse_job(doc));
  ASSERT_EQ(nj.stages.size(), 2u);

  auto p = predict_device_cache(nj);
  const double mib = 1024.0 * 1024;
  ASSERT_EQ(p.slice_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(p.slice_bytes[0], 6 * mib);
  EXPECT_DOUBLE_EQ(p.budget_bytes, p.slice_bytes[0] / 3);
  EXPECT_EQ(p.eviction, "belady");

  const double load_ms = mib * 8 / (nj.job.cluster.device.host_link_gbps * 1e9) * 1e3;
  ASSERT_EQ(p.stages.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    std::uint64_t loads = 1;
    for (int i = 1; i < n; ++i) loads += nj.sequence[i][s] != nj.sequence[i - 1][s];
    const auto& f = p.stages[s];
    EXPECT_EQ(f.uses, static_cast<std::uint64_t>(n)) << s;
    EXPECT_EQ(f.loads, loads) << s;
    EXPECT_EQ(f.evictions, loads - 1) << s;
    EXPECT_DOUBLE_EQ(f.load_bytes, loads * mib) << s;
    EXPECT_EQ(f.hits, n - loads) << s;
    EXPECT_NEAR(f.stall_ms, s == 0 ? loads * load_ms : 0.0, 1e-5 * loads) << s;
  }
  auto t = p.total();
  EXPECT_EQ(t.loads, p.stages[0].loads + p.stages[1].loads);
  EXPECT_NEAR(t.stall_ms, p.stages[0].stall_ms, 1e-12);

  // Pure: the same job predicts the same figures.
  auto again = predict_device_cache(nj);
  EXPECT_EQ(again.total().loads, t.loads);
  EXPECT_EQ(again.total().hits, t.hits);
}
