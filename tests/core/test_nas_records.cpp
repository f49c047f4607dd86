// The CSP dependency records for the recorder and telemetry (issue 7):
// every recorded wait edge is a real conflict (both subnets use the same
// candidate of that layer, held by that stage, and the blocker is earlier),
// resolved when the waiter's forward starts there.
#include <gtest/gtest.h>

#include "core/nas/nas_job.h"
#include "core/nas/subnet_records.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

TEST(NasRecords, WaitEdgesAndStatesFromTheSimulator) {
  NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 2, 60));
  std::map<int, std::vector<int>> subnets;
  std::vector<pw::SubnetState> states;
  std::vector<pw::SubnetEdge> edges;
  SubnetRecorder rec({[&](int id, const std::vector<int>& c) { subnets[id] = c; },
                      [&](const pw::SubnetState& s) { states.push_back(s); },
                      [&](const pw::SubnetEdge& e) { edges.push_back(e); }});
  auto r = simulate_supernet(supernet_sim_input(nj, SupernetMode::Csp), nullptr, &rec);
  rec.finish();
  ASSERT_EQ(subnets.size(), 60u);
  for (const auto& [id, c] : subnets) EXPECT_EQ(c, nj.sequence[id]);
  // Two choices per layer: conflicts everywhere, so there are edges.
  ASSERT_GT(edges.size(), 10u);
  EXPECT_EQ(edges.size(), rec.edges());
  // When did each subnet's forward start at each stage (independently of the recorder's bookkeeping)?
  std::map<std::pair<int, int>, std::int64_t> fwd_start;
  for (const auto& s : states)
    if (s.phase == pw::SubnetPhase::Forward && !fwd_start.count({s.subnet, s.stage})) fwd_start[{s.subnet, s.stage}] = s.t_ns;
  for (const auto& e : edges) {
    ASSERT_LT(e.waited_for, e.waiter);
    const auto& st = nj.stages[e.stage];
    ASSERT_GE(e.layer, st.first);
    ASSERT_LE(e.layer, st.last);
    EXPECT_EQ(nj.sequence[e.waiter][e.layer], nj.sequence[e.waited_for][e.layer]);
    ASSERT_GE(e.resolved_ns, e.t_ns) << "every edge resolves: all subnets finished";
    EXPECT_LE(e.resolved_ns, fwd_start.at({e.waiter, e.stage}));
  }
  // Each subnet: queued once, forward and backward at every stage, done once.
  std::map<int, int> done, fwd;
  for (const auto& s : states) {
    done[s.subnet] += s.phase == pw::SubnetPhase::Done;
    fwd[s.subnet] += s.phase == pw::SubnetPhase::Forward;
  }
  for (int b = 0; b < 60; ++b) {
    EXPECT_EQ(done[b], 1) << b;
    EXPECT_EQ(fwd[b], 4) << b;
  }
  // With many choices nobody waits.
  NasJob wide = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 100000, 30));
  SubnetRecorder none({});
  simulate_supernet(supernet_sim_input(wide, SupernetMode::Csp), nullptr, &none);
  none.finish();
  EXPECT_EQ(none.edges(), 0u);
  EXPECT_GT(r.waits, 0u);
}
