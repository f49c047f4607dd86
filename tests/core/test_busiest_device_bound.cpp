// The busiest device's share of the iteration bound (issue 40): whole
// layers do not split evenly over many stages, so some device does more
// than the average, and the (tensor, stages, replicas) search skips splits
// with more stages than layers can fill (test_search_work.cpp). Closed
// forms on hand-made profiles, and never above a simulated plan where
// layers barely outnumber stages.
#include <gtest/gtest.h>

#include <random>

#include "core/job/job_plan.h"
#include "core/plan/iteration_bound.h"
#include "core/schedule/schedule_kind.h"
#include "core/spec/job_spec.h"
#include "planner_instances.h"

using namespace pw;

namespace {

// Layers of forward f and backward 2 f (work 3 f each).
ModelProfile layers_of(const std::vector<double>& fwd) {
  ModelProfile p;
  for (size_t l = 0; l < fwd.size(); ++l) {
    LayerProfile L;
    L.name = "l";
    L.name += std::to_string(l);  // (gcc 12 -O3 warns about "l" + a temporary)
    L.fwd_ms = fwd[l];
    L.bwd_ms = 2 * fwd[l];
    p.layers.push_back(L);
  }
  return p;
}

PlanRequest request(const ModelProfile& p, int stages, int microbatches, ScheduleKind kind, int chunks = 1) {
  PlanRequest r;
  r.profile = &p;
  r.stages = stages;
  r.microbatches = microbatches;
  r.schedule = kind;
  r.chunks = chunks;
  return r;
}

}  // namespace

TEST(BusiestDeviceBound, ClosedForms) {
  // Works 3, 3, 12, 3, 3 on two devices, one range each: the best cut is
  // 3 + 3 + 12 | 3 + 3 or 3 + 3 | 12 + 3 + 3, 18 ms; the average is 12.
  const ModelProfile p = layers_of({1, 1, 4, 1, 1});
  PlanRequest r = request(p, 2, 1, ScheduleKind::OneFOneB);
  EXPECT_NEAR(busiest_device_work_ms(r), 18.0, 1e-9);
  // Two chunks per device (or "auto", which may choose a V): some device
  // holds ceil(5 / 2) = 3 layers, at least the three smallest, 9 ms.
  r.chunks = 2;
  EXPECT_DOUBLE_EQ(busiest_device_work_ms(r), 9.0);
  r.chunks = 1;
  r.auto_schedule = true;
  EXPECT_DOUBLE_EQ(busiest_device_work_ms(r), 9.0);
  r.auto_schedule = false;
  // Four equal layers (6 ms each) on two devices, the second three times
  // slower: 3 layers on the first (18 ms) and one on the second (18 ms);
  // equal devices would take 12 ms each. Placed freely, two layers at the
  // fastest speed, 12 ms.
  const ModelProfile q = layers_of({2, 2, 2, 2});
  PlanRequest s = request(q, 2, 1, ScheduleKind::OneFOneB);
  EXPECT_NEAR(busiest_device_work_ms(s), 12.0, 1e-9);
  s.slowdown = {1.0, 3.0};
  EXPECT_NEAR(busiest_device_work_ms(s), 18.0, 1e-9);
  s.chunks = 2;
  EXPECT_DOUBLE_EQ(busiest_device_work_ms(s), 12.0);
}

TEST(BusiestDeviceBound, RaisesTheIterationBoundWhereLayersDoNotSplitEvenly) {
  // Four layers of 3 ms on three devices under ZB-H1 (no fill or drain
  // term), four microbatches: the work over the devices is 4 x 12 / 3 =
  // 16 ms and the chain 4 x 2 = 8 ms, but one device holds two layers and
  // runs 4 x 6 = 24 ms of them.
  const ModelProfile p = layers_of({1, 1, 1, 1});
  PlanRequest r = request(p, 3, 4, ScheduleKind::ZBH1);
  EXPECT_NEAR(iteration_lower_bound_ms(r), 24.0, 1e-9);
  // Three devices and three layers: each holds one, the average again.
  const ModelProfile three = layers_of({1, 1, 1});
  PlanRequest even = request(three, 3, 4, ScheduleKind::ZBH1);
  EXPECT_NEAR(iteration_lower_bound_ms(even), 12.0, 1e-9);
}

TEST(BusiestDeviceBound, NeverAboveASimulatedPlanWhenLayersBarelyOutnumberStages) {
  // Where the term binds: p + 1 to p + 3 layers on p devices.
  std::mt19937_64 rng(40);
  int binding = 0, checked = 0;
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::GPipe, ScheduleKind::ZBH1, ScheduleKind::ZBH2,
                            ScheduleKind::PipeDream, ScheduleKind::ZBV}) {
    for (int trial = 0; trial < 6; ++trial) {
      const int p = 2 + static_cast<int>(rng() % 4);
      const int L = (is_v_shape(kind) ? 2 * p : p) + 1 + static_cast<int>(rng() % 3);
      const int m = 1 + static_cast<int>(rng() % (3 * p));
      auto x = plantest::random_instance(rng, L, p, m, kind);
      if (trial % 2) x.req.slowdown = std::vector<double>(p, 1.0), x.req.slowdown[rng() % p] = 1.6;
      const double capacity = [&] {
        double c = 0;
        for (int d = 0; d < p; ++d) c += x.req.slowdown.empty() ? 1.0 : 1.0 / x.req.slowdown[d];
        return c;
      }();
      double work = 0;
      for (const auto& l : x.profile->layers) work += l.fwd_ms + l.bwd_ms;
      if (busiest_device_work_ms(x.req) > work / capacity * (1 + 1e-9)) ++binding;
      const double bound = iteration_lower_bound_ms(x.req);
      for (const char* planner : {"uniform", "vpipe", "gpipe"}) {
        SCOPED_TRACE(to_string(kind) + " " + planner + " p=" + std::to_string(p) + " L=" + std::to_string(L));
        Plan plan = run_planner(planner, x.req);
        EXPECT_LE(bound, plan.iteration_time_ms * (1 + 1e-9));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 6 * 3);
  EXPECT_GT(binding, 18) << "the instances should exercise the busiest device's term";
}
