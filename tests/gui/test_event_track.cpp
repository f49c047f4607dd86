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

// The level-of-detail buckets against a brute-force sum: every bucket of
// every level holds exactly the time events of each kind overlap it, also
// after the run outgrew kMaxBuckets and the buckets doubled in width.
TEST(TrackLod, BucketsHoldTheBusyTimeOfEachKind) {
  std::mt19937 rng(3);
  std::vector<Event> v;
  const EventKind kinds[] = {EventKind::Forward, EventKind::Backward, EventKind::Recompute};
  std::int64_t t = 0;
  for (int i = 0; i < 4000; ++i) {
    t += static_cast<std::int64_t>(rng() % 3000);
    Event e = ev(t, t + 1 + static_cast<std::int64_t>(rng() % (i % 50 == 0 ? 200000 : 5000)));
    e.kind = kinds[rng() % 3];
    v.push_back(e);
  }
  // Far beyond 1 us x kMaxBuckets: forces coarsening.
  Event late = ev(std::int64_t{1} << 35, (std::int64_t{1} << 35) + 777);
  late.kind = EventKind::Backward;
  for (int pass = 0; pass < 2; ++pass) {
    EventTrack tr;
    tr.append(v);
    if (pass == 1) tr.append({late});
    const TrackLod& lod = tr.lod();
    ASSERT_GT(lod.levels(), 1);
    ASSERT_LE(lod.level(0).size(), TrackLod::kMaxBuckets);
    if (pass == 1) EXPECT_GT(lod.shift(), 10);
    ASSERT_EQ(lod.level(lod.levels() - 1).size(), 1u);
    for (int l : {0, 3, lod.levels() - 1}) {
      const std::int64_t w = std::int64_t{1} << (lod.shift() + l);
      const auto& buckets = lod.level(l);
      for (std::size_t b = 0; b < buckets.size(); b += 1 + buckets.size() / 300) {
        for (int slot = 0; slot < lod.slotsUsed(); ++slot) {
          double expect = 0;
          for (const Event& e : v) {
            if (e.kind != lod.slotKind(slot)) continue;
            std::int64_t lo = std::max<std::int64_t>(e.start_ns, static_cast<std::int64_t>(b) * w);
            std::int64_t hi = std::min<std::int64_t>(e.end_ns, static_cast<std::int64_t>(b + 1) * w);
            if (hi > lo) expect += static_cast<double>(hi - lo);
          }
          if (pass == 1 && late.kind == lod.slotKind(slot)) {
            std::int64_t lo = std::max<std::int64_t>(late.start_ns, static_cast<std::int64_t>(b) * w);
            std::int64_t hi = std::min<std::int64_t>(late.end_ns, static_cast<std::int64_t>(b + 1) * w);
            if (hi > lo) expect += static_cast<double>(hi - lo);
          }
          ASSERT_DOUBLE_EQ(buckets[b][slot], expect) << "pass " << pass << " level " << l << " bucket " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace pw::gui
