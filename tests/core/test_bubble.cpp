// The one bubble definition (core/events/bubble.h): hand values, and the
// simulator's figure against the closed forms and against the same
// definition applied to its events the way a recorded run's figures are
// (busy events over first start to last end).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "core/events/bubble.h"
#include "core/events/event_kinds.h"
#include "uniform_pipeline.h"

namespace pw {
namespace {

TEST(Bubble, HandValues) {
  EXPECT_DOUBLE_EQ(bubble_fraction(30, 2, 20), 0.25);  // 30 of 2 x 20 busy
  EXPECT_DOUBLE_EQ(bubble_fraction(0, 3, 10), 1.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(60, 3, 20), 0.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(70, 3, 20), 0.0);  // busier than possible: not negative
  EXPECT_DOUBLE_EQ(bubble_fraction(5, 0, 20), 0.0);   // nothing to share
  EXPECT_DOUBLE_EQ(bubble_fraction(5, 2, 0), 0.0);
  EXPECT_DOUBLE_EQ(busy_fraction(5, 20), 0.25);
  EXPECT_DOUBLE_EQ(busy_fraction(25, 20), 1.0);
  EXPECT_DOUBLE_EQ(busy_fraction(5, 0), 0.0);
}

struct Collect : EventSink {
  std::vector<Event> events;
  void on_event(const Event& e) override { events.push_back(e); }
};

// F = 1, B = 1.2, W = 0.8 per microbatch and device; free links, no step.
struct Case {
  ScheduleKind kind;
  int p, m;
  double closed;  // the bubble in closed form (docs/simulator.md)
};

class BubbleDefinition : public ::testing::TestWithParam<Case> {};

TEST_P(BubbleDefinition, SimulatorFigureIsTheClosedFormAndTheRecordedRunsFigure) {
  const auto [kind, p, m, closed] = GetParam();
  LayerProfile L;
  L.fwd_ms = 1;
  L.bwd_ms = 2;
  L.bwd_weight_ms = 0.8;
  auto pipe = test::uniform_pipeline(kind, p, m, 1, 1, L);
  Collect c;
  SimResult r = pipe.run(&c);
  EXPECT_NEAR(r.bubble_fraction, closed, 1e-9);
  // As stats/replay compute it from the recorded events.
  std::int64_t busy = 0, first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const auto& e : c.events) {
    first = std::min(first, e.start_ns), last = std::max(last, e.end_ns);
    if (is_busy(e.kind)) busy += e.end_ns - e.start_ns;
  }
  EXPECT_NEAR(bubble_fraction(static_cast<double>(busy), p, static_cast<double>(last - first)), closed, 1e-9);
}

// GPipe and 1F1B: (p - 1) / (m + p - 1) with F + B + W the unit; ZB-H1:
// (p - 1)(F + B - W) / (m (F + B + W) + (p - 1)(F + B - W)).
INSTANTIATE_TEST_SUITE_P(Schedules, BubbleDefinition,
                         ::testing::Values(Case{ScheduleKind::GPipe, 4, 8, 3.0 / 11}, Case{ScheduleKind::OneFOneB, 4, 8, 3.0 / 11},
                                           Case{ScheduleKind::ZBH1, 4, 8, 3 * 1.4 / (8 * 3 + 3 * 1.4)}));

}  // namespace
}  // namespace pw
