// Activation offload (the swap policy) on the host link, timed by hand
// (issue 43): each case's timeline is worked out below from the rule the
// simulator states (simulator.h) and compared event by event:
// - the offload of microbatch i's activations starts when its forward ends
//   (or when the link's outbound channel is free);
// - its reload is issued when the action before its backward starts (after
//   its own offload, and, issued from a backward, after the device's
//   offloads), waits for the inbound channel, and the backward waits for it;
// - under a split backward, B frees what was reloaded but W's stash, which
//   W frees.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/analysis/explain_report.h"
#include "core/analysis/idle_attribution.h"
#include "core/plan/pipeline_model.h"
#include "core/plan/planner.h"
#include "core/sim/simulator.h"
#include "offload_test_helpers.h"
#include "uniform_pipeline.h"

using namespace pw;
using pw::test::Pipeline;
using pw::test::uniform_pipeline;

namespace {

using pw::test::EventLog;
using pw::test::Span;

// One layer per stage (offload_test_helpers.h), input 0.1 MB: W's stash.
Pipeline make(ScheduleKind kind, int p, int m, double f, double b, double w, std::uint64_t act) {
  return pw::test::one_layer_offload_pipeline(kind, p, m, f, b, w, act, 100'000);
}

}  // namespace

// ZB-H1 on 2 stages, 2 microbatches (device 0: F0 F1 B0 W0 B1 W1; device 1:
// F0 B0 F1 B1 W0 W1), F = 2, B = 3, W = 1 ms, stage 0 offloading 2.5 MB
// (2.5 ms each way):
//   device 1 (keep): F0 [2,4) B0 [4,7) F1 [7,9) B1 [9,12) W0 [12,13) W1 [13,14)
//   device 0: F0 [0,2), offload 0 [2,4.5); F1 [2,4), offload 1 [4.5,7) (the
//   link is busy until 4.5); reload 0 issued at F1's start, after offload 0:
//   [4.5,7); B0 waits for its gradient (7): [7,10); W0 [10,11); reload 1
//   issued at W0's start: [10,12.5); B1's gradient arrives at 12 but the
//   reload is late: B1 [12.5,15.5), W1 [15.5,16.5): 0.5 ms over keep's 16.
TEST(OffloadTimeline, ZeroBubbleH1TwoStagesByHand) {
  Pipeline keep = make(ScheduleKind::ZBH1, 2, 2, 2, 4, 1, 2'500'000);
  EXPECT_NEAR(keep.run().iteration_time_ms, 16.0, 1e-9);

  Pipeline s = make(ScheduleKind::ZBH1, 2, 2, 2, 4, 1, 2'500'000);
  s.plan.policy[0] = MemoryPolicy::Swap;
  EventLog rec;
  SimResult r = s.run(&rec);
  EXPECT_NEAR(r.iteration_time_ms, 16.5, 1e-9);
  EXPECT_EQ(rec.one(EventKind::SwapOut, 0, 0), Span(2, 4.5));
  EXPECT_EQ(rec.one(EventKind::SwapOut, 0, 1), Span(4.5, 7));
  EXPECT_EQ(rec.one(EventKind::SwapIn, 0, 0), Span(4.5, 7));
  EXPECT_EQ(rec.one(EventKind::SwapIn, 0, 1), Span(10, 12.5));
  EXPECT_EQ(rec.one(EventKind::BackwardInput, 0, 0), Span(7, 10));
  EXPECT_EQ(rec.one(EventKind::BackwardWeight, 0, 0), Span(10, 11));
  EXPECT_EQ(rec.one(EventKind::BackwardInput, 0, 1), Span(12.5, 15.5));
  EXPECT_EQ(rec.one(EventKind::BackwardWeight, 0, 1), Span(15.5, 16.5));
  EXPECT_EQ(rec.one(EventKind::BackwardInput, 1, 1), Span(9, 12));
  // Device 0's memory, A = 2.5 MB, stash 0.1 MB: 2A while F1 runs and
  // offload 0 is out; at 4.5 offload 0 ends as reload 0 starts (2A); B0
  // ends at 10 keeping the stash while reload 1 starts (A + stash); never
  // more than 2A.
  EXPECT_EQ(r.stages[0].peak_memory_bytes, 5'000'000u);
  // The stall is the swap's: the idle-time attribution names the 0.5 ms.
  EXPECT_NEAR(rec.swap_stall_ms(0), 0.5, 1e-9);
}

// A backward right after a backward reloads behind it. GPipe on one stage,
// 2 microbatches, F = 2, backward 4, 1.5 MB offloaded (1.5 ms each way):
// F0 [0,2), offload 0 [2,3.5); F1 [2,4), offload 1 [4,5.5); reload 0 issued
// at F1's start, after offload 0: [3.5,5); b0 [5,9); reload 1 issued at b0's
// start, after the device's offloads (5.5): [5.5,7), hidden: b1 [9,13).
// (Issued at b0's end it would cost 1.5 ms: b1 [10.5,14.5).)
TEST(OffloadTimeline, ReloadAfterABackwardHidesBehindIt) {
  Pipeline s = make(ScheduleKind::GPipe, 1, 2, 2, 4, 0, 1'500'000);
  s.plan.policy[0] = MemoryPolicy::Swap;
  EventLog rec;
  SimResult r = s.run(&rec);
  EXPECT_EQ(rec.one(EventKind::SwapOut, 0, 1), Span(4, 5.5));
  EXPECT_EQ(rec.one(EventKind::SwapIn, 0, 0), Span(3.5, 5));
  EXPECT_EQ(rec.one(EventKind::Backward, 0, 0), Span(5, 9));
  EXPECT_EQ(rec.one(EventKind::SwapIn, 0, 1), Span(5.5, 7));
  EXPECT_EQ(rec.one(EventKind::Backward, 0, 1), Span(9, 13));
  EXPECT_NEAR(r.iteration_time_ms, 13.0, 1e-9);
  // Two buffers at most beside the backward: b0's own and b1's reload.
  EXPECT_EQ(r.stages[0].peak_memory_bytes, 3'000'000u);
}

// The planners' view agrees: on 1F1B's stage 0 (F0 F1 b0 F2 b1 F3 b2 b3)
// every reload hides behind the action before it when the transfer is
// shorter than a forward, the drain's last backward included, so a range
// that swaps costs what it keeps would (no drain stall) and so does the
// simulated iteration.
TEST(OffloadTimeline, PlannerCountsNoStallWhereTheReloadHides) {
  Pipeline keep = make(ScheduleKind::OneFOneB, 2, 4, 2, 4, 0, 1'500'000);
  Pipeline s = make(ScheduleKind::OneFOneB, 2, 4, 2, 4, 0, 1'500'000);
  s.plan.policy[0] = MemoryPolicy::Swap;
  EXPECT_NEAR(s.run().iteration_time_ms, keep.run().iteration_time_ms, 1e-9);
  PlanRequest req;
  req.profile = &s.profile;
  req.device = s.device;
  req.stages = 2;
  req.microbatches = 4;
  PipelineModel model(req);
  RangeChoice c = model.evaluate(0, 0, 0, s.plan.policy);
  EXPECT_EQ(c.swap_bytes, 1'500'000u);
  EXPECT_EQ(c.drain_ms, 0.0);
  // A 2.5 ms transfer (over the 2 ms forward) stalls after each forward but
  // not after b2 (4 ms): b0, b1, b2 follow F1, F2, F3: 3 x 0.5 ms.
  Pipeline slow = make(ScheduleKind::OneFOneB, 2, 4, 2, 4, 0, 2'500'000);
  req.profile = &slow.profile;
  PipelineModel model2(req);
  slow.plan.policy[0] = MemoryPolicy::Swap;
  EXPECT_NEAR(model2.evaluate(0, 0, 0, slow.plan.policy).drain_ms, 1.5, 1e-9);
}

// Which layers go when: a stage of four layers offloading layers 0, 2 and
// 3 (1, 1 and 2 MB: 4 ms in all) sends two runs back to back in layer
// order, 0 alone then 2-3, each its share of the time by bytes, and
// reloads them the same way.
TEST(OffloadTimeline, EachRunOfSwappedLayersIsItsOwnTransfer) {
  LayerProfile L;
  L.fwd_ms = 2;
  L.bwd_ms = 4;
  L.activation_bytes = 1'000'000;
  Pipeline s = uniform_pipeline(ScheduleKind::GPipe, 1, 1, 1, 4, L);
  s.device.host_link_gbps = 8;
  s.profile.layers[3].activation_bytes = 2'000'000;
  s.plan.policy = {MemoryPolicy::Swap, MemoryPolicy::Keep, MemoryPolicy::Swap, MemoryPolicy::Swap};
  EventLog rec;
  s.run(&rec);
  std::vector<Event> out, in;
  for (const Event& e : rec.events) {
    if (e.kind == EventKind::SwapOut) out.push_back(e);
    if (e.kind == EventKind::SwapIn) in.push_back(e);
  }
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(in.size(), 2u);
  // The forward of 4 layers ends at 8: layer 0 [8, 9), layers 2-3 [9, 12).
  EXPECT_EQ(std::make_pair(out[0].first_layer, out[0].last_layer), std::make_pair(0, 0));
  EXPECT_EQ(std::make_pair(out[1].first_layer, out[1].last_layer), std::make_pair(2, 3));
  EXPECT_EQ(out[0].start_ns, 8'000'000);
  EXPECT_EQ(out[0].end_ns, 9'000'000);
  EXPECT_EQ(out[1].start_ns, 9'000'000);
  EXPECT_EQ(out[1].end_ns, 12'000'000);
  EXPECT_EQ(out[0].bytes + out[1].bytes, 4'000'000);
  // The backward's reload starts when its forward's offload is done (12).
  EXPECT_EQ(in[0].start_ns, 12'000'000);
  EXPECT_EQ(in[1].end_ns, 16'000'000);
}

// explain's offload summary of the ZB-H1 case above: stage 0 offloads layer
// 0 of both microbatches (2.5 MB each way each); its link carries
// [2, 7) out and [4.5, 7) + [10, 12.5) in: 10 ms, of which the stage waited
// 0.5 ms (B1's late reload), so 9.5 ms hid behind compute.
TEST(OffloadTimeline, ExplainSaysWhichLayersWentWhenAndWhatTheLinkHid) {
  Pipeline s = make(ScheduleKind::ZBH1, 2, 2, 2, 4, 1, 2'500'000);
  s.plan.policy[0] = MemoryPolicy::Swap;
  EventLog rec;
  s.run(&rec);
  const ExplainReport x = explain_report(rec.events, ExplainSources{}, ExplainReportOptions{.suggestions = false});
  ASSERT_TRUE(x.explained);
  ASSERT_TRUE(x.offload.has_value());
  const OffloadSummary& o = *x.offload;
  ASSERT_EQ(o.stages.size(), 1u);
  const StageOffload& st = o.stages[0];
  EXPECT_EQ(st.stage, 0);
  EXPECT_EQ(st.layers, std::vector<std::int32_t>{0});
  EXPECT_EQ(st.bytes_out, 5'000'000);
  EXPECT_EQ(st.bytes_in, 5'000'000);
  EXPECT_EQ(st.link_ns, 10'000'000);
  EXPECT_EQ(st.exposed_ns, 500'000);
  EXPECT_EQ(st.hidden_ns(), 9'500'000);
  ASSERT_EQ(st.microbatches.size(), 2u);
  EXPECT_EQ(st.microbatches[0].microbatch, 0);
  EXPECT_EQ(st.microbatches[0].out_start_ns, 2'000'000);
  EXPECT_EQ(st.microbatches[0].in_end_ns, 7'000'000);
  EXPECT_EQ(st.microbatches[1].microbatch, 1);
  EXPECT_EQ(st.microbatches[1].out_start_ns, 4'500'000);
  EXPECT_EQ(st.microbatches[1].in_start_ns, 10'000'000);
  EXPECT_EQ(o.hidden_ns(), 9'500'000);
  // In words, as explain prints it and the studio's Explain dock shows it.
  EXPECT_EQ(offload_lines(o),
            (std::vector<std::string>{"activation offload (swap policy, over the host link): 10.00 ms of transfers, "
                                      "9.50 ms hidden behind compute, 0.50 ms exposed (swap_stall)",
                                      "stage 0: layers 0 of 2 microbatch(es), 0.00 GiB out; link 10.00 ms, hidden 9.50 ms, "
                                      "exposed 0.50 ms"}));
  // Keep: nothing offloaded, no summary.
  Pipeline keep = make(ScheduleKind::ZBH1, 2, 2, 2, 4, 1, 2'500'000);
  EventLog none;
  keep.run(&none);
  EXPECT_FALSE(explain_report(none.events, ExplainSources{}, ExplainReportOptions{.suggestions = false}).offload);
}

// The policy solver under pipeline.memory_cap (issue 43), with the order's
// own in-flight count: ZB-H1's stage 0 on 4 stages holds 4 microbatches
// (its warm-up forwards), 4 layers of 1 MB each, no W stash (no weights),
// so keep holds 4 x 4 = 16 MB. Offloading k layers holds 4 (4 - k) MB plus
// 2k MB back for the backward running and the next: 16 - 2k MB. Under a
// 10 MB cap at least 3 layers must go (or be recomputed: 16 - 3k MB, a
// forward each), and the solver offloads, hidden behind compute.
TEST(OffloadTimeline, TheCapIsMetWithTheOrdersOwnInFlightCountByOffloading) {
  LayerProfile L;
  L.fwd_ms = 1;
  L.bwd_ms = 2;
  L.bwd_weight_ms = 0;
  L.activation_bytes = 1'000'000;
  L.input_bytes = 250'000;
  Pipeline s = uniform_pipeline(ScheduleKind::ZBH1, 4, 8, 1, 4, L);
  PlanRequest req;
  req.profile = &s.profile;
  req.device = s.device;
  req.schedule = ScheduleKind::ZBH1;
  req.stages = 4;
  req.microbatches = 8;
  ASSERT_EQ(PipelineModel(req).in_flight(0), 4);
  std::vector<MemoryPolicy> pol(4);
  EXPECT_EQ(PipelineModel(req).solve(0, 0, 3, pol.data()).swap_bytes, 0u);  // no cap: keep
  req.memory_cap.bytes = 10'000'000;
  PipelineModel capped(req);
  RangeChoice c = capped.solve(0, 0, 3, pol.data());
  EXPECT_TRUE(c.fits);
  EXPECT_EQ(c.swap_bytes, 3'000'000u);
  EXPECT_EQ(c.recompute_ms, 0.0);
  EXPECT_EQ(std::count(pol.begin(), pol.end(), MemoryPolicy::Swap), 3);
  // Held: 4 x 1 MB kept + 2 x 3 MB back = 10 MB, the cap exactly.
  StageCost held;
  held.kept_bytes_per_mb = 1'000'000;
  held.swap_bytes_per_mb = 3'000'000;
  EXPECT_EQ(held_activation_bytes(held, 4, 0, -1), 10'000'000u);
  // A fraction: 1/2 of 1F1B's min(m, p) = 4 microbatches kept whole, 8 MB:
  // 16 - 2k <= 8 needs all 4 offloaded.
  req.memory_cap = MemoryCap{};
  req.memory_cap.fraction = 0.5;
  EXPECT_EQ(PipelineModel(req).solve(0, 0, 3, pol.data()).swap_bytes, 4'000'000u);
  // Without a host link the cap is met by recompute: 16 - 3k <= 10, k = 2.
  req.memory_cap = MemoryCap{};
  req.memory_cap.bytes = 10'000'000;
  req.device.host_link_gbps = 1e-6;
  RangeChoice r = PipelineModel(req).solve(0, 0, 3, pol.data());
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.swap_bytes, 0u);
  EXPECT_EQ(r.recompute_ms, 2.0);
}
