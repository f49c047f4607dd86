#include <gtest/gtest.h>

#include <random>

#include "gui/models/event_track.h"

namespace pw::gui {
namespace {

Event ev(std::int64_t s, std::int64_t e, EventKind k = EventKind::Forward, int mb = 0) {
  Event x;
  x.start_ns = s;
  x.end_ns = e;
  x.kind = k;
  x.microbatch = mb;
  return x;
}

TEST(EventTrack, KeepsEventsSortedAcrossOutOfOrderBatches) {
  EventTrack t;
  t.append({ev(10, 20, EventKind::Forward, 1), ev(30, 40, EventKind::Forward, 3)});
  t.append({ev(25, 28, EventKind::Backward, 2), ev(0, 5, EventKind::Forward, 0), ev(50, 60, EventKind::Forward, 4)});
  ASSERT_EQ(t.size(), 5u);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t.microbatch(i), static_cast<int>(i)) << i;
  EXPECT_EQ(t.kind(2), EventKind::Backward);  // other columns moved with the start
  EXPECT_EQ(t.end(2), 28);
}

TEST(EventTrack, FirstEndingAfterMatchesLinearScan) {
  // Long and short events interleaved: the first visible event in a window
  // may start long before it. Compare with a brute-force scan.
  std::mt19937 rng(7);
  std::vector<Event> v;
  std::int64_t t = 0;
  for (int i = 0; i < 2000; ++i) {
    t += rng() % 50;
    v.push_back(ev(t, t + 1 + static_cast<std::int64_t>(rng() % (i % 17 == 0 ? 5000 : 30))));
  }
  EventTrack tr;
  tr.append(v);
  for (std::int64_t q = -10; q < t + 100; q += 37) {
    // The first event visible from q is simply the first one ending after q.
    std::size_t expect = v.size();
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i].end_ns > q) {
        expect = i;
        break;
      }
    ASSERT_EQ(tr.first_ending_after(q), expect) << "t=" << q;
  }
}

TEST(EventTrack, DurationSumAndFindAt) {
  EventTrack t;
  t.append({ev(0, 10), ev(10, 15), ev(20, 40)});
  EXPECT_EQ(t.duration_sum(0, 3), 10 + 5 + 20);
  EXPECT_EQ(t.duration_sum(1, 2), 5);
  EXPECT_EQ(t.find_at(12), 1);
  EXPECT_EQ(t.find_at(17), -1);
  EXPECT_EQ(t.find_at(39), 2);
  EXPECT_EQ(t.first_starting_at_or_after(11), 2u);
}

}  // namespace
}  // namespace pw::gui
