// The lower bound that lets microbatch "auto" skip sizes (issue 27):
// closed forms on a hand-made profile, never above a simulated plan, and
// the search with it chooses exactly what planning every size chooses.
#include <gtest/gtest.h>

#include <random>

#include "core/job/job_plan.h"
#include "core/plan/iteration_bound.h"
#include "core/plan/microbatch_search.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/job_spec.h"
#include "planner_instances.h"

using namespace pw;

namespace {

// Four layers: forward 1 ms, backward 2 ms of which the weight gradient 1.
ModelProfile four_layers() {
  ModelProfile p;
  for (int l = 0; l < 4; ++l) {
    LayerProfile L;
    L.name = "l" + std::to_string(l);
    L.fwd_ms = 1;
    L.bwd_ms = 2;
    L.bwd_weight_ms = 1;
    p.layers.push_back(L);
  }
  return p;
}

}  // namespace

TEST(IterationBound, ClosedForms) {
  ModelProfile prof = four_layers();
  PlanRequest r;
  r.profile = &prof;
  r.stages = 2;
  r.schedule = ScheduleKind::OneFOneB;
  // One microbatch under 1F1B: its forward then its whole backward through
  // both stages, 12 ms (the fill-drain term, work / (1 - 0^2)).
  r.microbatches = 1;
  EXPECT_DOUBLE_EQ(iteration_lower_bound_ms(r), 12.0);
  // Four: the best split of 12 ms per microbatch over 2 stages, w_0 = 12 x
  // 4 / 7 and w_1 = 12 x 3 / 7, waits m w_0 = 4 w_0 at stage 0 and w_0 +
  // 4 w_1 at stage 1, both 48 / (1 - (3/4)^2) / 4 = 192 / 7 ms; above the
  // 48 ms of work over 2 devices.
  r.microbatches = 4;
  EXPECT_NEAR(iteration_lower_bound_ms(r), 192.0 / 7.0, 1e-12);
  // Zero Bubble's H1 has no such fill: the work over the devices.
  r.schedule = ScheduleKind::ZBH1;
  EXPECT_DOUBLE_EQ(iteration_lower_bound_ms(r), 24.0);
  r.schedule = ScheduleKind::OneFOneB;
  // A device three times slower does a third of the work per ms.
  r.slowdown = {1.0, 3.0};
  EXPECT_DOUBLE_EQ(iteration_lower_bound_ms(r), 48.0 / (1.0 + 1.0 / 3.0));
  // Async PipeDream overlaps iterations: no chain inside one.
  r.slowdown.clear();
  r.microbatches = 1;
  r.schedule = ScheduleKind::PipeDream;
  EXPECT_DOUBLE_EQ(iteration_lower_bound_ms(r), 6.0);
  r.auto_schedule = true;  // auto plans flushing families only
  EXPECT_DOUBLE_EQ(iteration_lower_bound_ms(r), 8.0);
}

TEST(IterationBound, NeverAboveASimulatedPlan) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream, ScheduleKind::ZBH1,
                            ScheduleKind::ZBH2, ScheduleKind::ZBV, ScheduleKind::DualPipeV}) {
    for (int trial = 0; trial < 6; ++trial) {
      const int p = 2 + static_cast<int>(rng() % 3);
      const int L = 2 * p + static_cast<int>(rng() % 10);
      int m = 1 + static_cast<int>(rng() % (3 * p));
      if (kind == ScheduleKind::DualPipeV) m = std::max(m, 2 * p);
      auto x = plantest::random_instance(rng, L, p, m, kind);
      if (trial % 2) x.req.slowdown = std::vector<double>(p, 1.0), x.req.slowdown[rng() % p] = 1.7;
      const double bound = iteration_lower_bound_ms(x.req);
      for (const char* planner : {"uniform", "vpipe", "gpipe"}) {
        SCOPED_TRACE(to_string(kind) + " " + planner + " p=" + std::to_string(p) + " m=" + std::to_string(m));
        Plan plan = run_planner(planner, x.req);
        // Infeasible plans are simulated too (their time is what they would take).
        EXPECT_LE(bound, plan.iteration_time_ms * (1 + 1e-9));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 7 * 6 * 3);
}

TEST(MicrobatchSearch, TheBoundSkipsOnlySizesThatCannotWin) {
  // GPT jobs on presets with a fixed part per microbatch: small sizes are
  // slow, large ones leave bubbles; the bound prunes both ends.
  int pruned = 0;
  for (const char* device : {"a100-80g", "rtx2080ti", "h100"}) {
    for (int batch : {32, 64}) {
      SCOPED_TRACE(std::string(device) + " batch " + std::to_string(batch));
      nlohmann::json d = nlohmann::json::parse(R"({"name": "g", "model": {"kind": "gpt", "layers": 8, "hidden": 1024,
          "heads": 16, "seq_len": 512, "vocab": 32000}, "training": {"iterations": 1, "microbatch_size": "auto"},
          "cluster": {"devices": 4}, "pipeline": {"stages": 4, "planner": "vpipe"}})");
      d["training"]["batch_size"] = batch;
      d["cluster"]["device"] = device;
      const JobSpec job = parse_job(d);
      std::map<int, ModelProfile> profiles;
      auto request = [&](const JobSpec& at) {
        auto it = profiles.find(at.training.microbatch_size);
        if (it == profiles.end()) it = profiles.emplace(at.training.microbatch_size, job_profile(at)).first;
        return plan_request(at, it->second);
      };
      auto plan_at = [&](const JobSpec& at) { return run_planner("vpipe", request(at)); };
      JobSpec every_job = job, bounded_job = job;
      Plan every = search_microbatch(every_job, plan_at);
      Plan bounded = search_microbatch(bounded_job, plan_at,
                                       [&](const JobSpec& at) { return iteration_lower_bound_ms(request(at)); });
      EXPECT_EQ(bounded.microbatch_size, every.microbatch_size);
      EXPECT_DOUBLE_EQ(bounded.iteration_time_ms, every.iteration_time_ms);
      EXPECT_EQ(bounded_job.training.microbatch_size, every_job.training.microbatch_size);
      ASSERT_EQ(bounded.microbatch_search.size(), every.microbatch_search.size());
      for (size_t i = 0; i < every.microbatch_search.size(); ++i) {
        const auto& row = bounded.microbatch_search[i];
        EXPECT_EQ(row.microbatch_size, every.microbatch_search[i].microbatch_size);  // still in size order
        if (!row.pruned) continue;
        ++pruned;
        // Independently of the bound: planning the size does not beat the choice.
        EXPECT_GE(every.microbatch_search[i].iteration_time_ms, every.iteration_time_ms);
        EXPECT_GT(row.lower_bound_ms, bounded.iteration_time_ms);
        EXPECT_FALSE(row.feasible);
      }
    }
  }
  EXPECT_GT(pruned, 0) << "the bound pruned nothing: the search plans every size again";
}
