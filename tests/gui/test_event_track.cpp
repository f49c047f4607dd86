#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <random>

#include "gui/models/chunked_column.h"
#include "gui/models/event_track.h"
#include "gui/models/lod_index.h"
#include "gui/models/track_lod.h"

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
void expect_buckets_hold(const TrackLod& lod, const std::vector<Event>& events, const char* what) {
  ASSERT_GT(lod.levels(), 1) << what;
  ASSERT_LE(lod.level(0).size(), TrackLod::kMaxBuckets) << what;
  ASSERT_EQ(lod.level(lod.levels() - 1).size(), 1u) << what;
  const std::int64_t org = lod.origin();
  for (int l : {0, 3, lod.levels() - 1}) {
    const std::int64_t w = std::int64_t{1} << (lod.shift() + l);
    const auto& buckets = lod.level(l);
    for (std::size_t b = 0; b < buckets.size(); b += 1 + buckets.size() / 300) {
      for (int slot = 0; slot < lod.slotsUsed(); ++slot) {
        double expect = 0;
        for (const Event& e : events) {
          if (e.kind != lod.slotKind(slot)) continue;
          std::int64_t lo = std::max<std::int64_t>(e.start_ns, org + static_cast<std::int64_t>(b) * w);
          std::int64_t hi = std::min<std::int64_t>(e.end_ns, org + static_cast<std::int64_t>(b + 1) * w);
          if (hi > lo) expect += static_cast<double>(hi - lo);
        }
        ASSERT_DOUBLE_EQ(buckets[b][slot], expect) << what << " level " << l << " bucket " << b;
      }
    }
  }
}

std::vector<Event> lod_events(std::int64_t t0) {
  std::mt19937 rng(3);
  std::vector<Event> v;
  const EventKind kinds[] = {EventKind::Forward, EventKind::Backward, EventKind::Recompute};
  std::int64_t t = t0;
  for (int i = 0; i < 4000; ++i) {
    t += static_cast<std::int64_t>(rng() % 3000);
    Event e = ev(t, t + 1 + static_cast<std::int64_t>(rng() % (i % 50 == 0 ? 200000 : 5000)));
    e.kind = kinds[rng() % 3];
    v.push_back(e);
  }
  return v;
}

TEST(ChunkedColumn, AppendingNeverMovesStoredElements) {
  // A live tick must not copy the whole track (a std::vector's doubling did,
  // in step for every stage: the late frames of the live benchmark).
  ChunkedColumn<std::int64_t, 4> c;
  c.push_back(7);
  const std::int64_t* first = &c[0];
  for (int i = 1; i < 1000; ++i) c.push_back(i * 3);
  EXPECT_EQ(&c[0], first);
  ASSERT_EQ(c.size(), 1000u);
  for (std::size_t i = 1; i < c.size(); ++i) ASSERT_EQ(c[i], static_cast<std::int64_t>(i) * 3) << i;
  EXPECT_EQ(c.partition_point(0, c.size(), [](std::int64_t v) { return v < 300; }), 100u);
  c.resize(17);
  EXPECT_EQ(c.back(), 48);
  c.resize(40);
  EXPECT_EQ(c.size(), 40u);
  EXPECT_EQ(c[16], 48);
}

TEST(EventTrack, SortsAndSearchesAcrossColumnChunks) {
  // More events than one column chunk, delivered in shuffled batches: the
  // columns stay sorted and the searches agree with a brute-force scan.
  std::mt19937 rng(11);
  std::vector<Event> all;
  for (int i = 0; i < 50000; ++i) all.push_back(ev(i * 10, i * 10 + 5 + (i % 7 == 0 ? 400 : 0), EventKind::Forward, i));
  EventTrack t;
  for (std::size_t b = 0; b < all.size(); b += 3000) {
    std::vector<Event> batch(all.begin() + static_cast<std::ptrdiff_t>(b),
                             all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), b + 3000)));
    std::shuffle(batch.begin(), batch.end(), rng);
    t.append(batch);
  }
  ASSERT_EQ(t.size(), all.size());
  for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(t.microbatch(i), static_cast<int>(i)) << i;
  for (std::int64_t q : {0LL, 163835LL, 163840LL, 327675LL, 499990LL, 600000LL}) {
    std::size_t brute = 0;
    while (brute < all.size() && all[brute].start_ns < q) ++brute;
    EXPECT_EQ(t.first_starting_at_or_after(q), brute) << q;
    std::size_t first_end = 0;
    std::int64_t run_max = INT64_MIN;
    for (; first_end < all.size(); ++first_end) {
      run_max = std::max(run_max, all[first_end].end_ns);
      if (run_max > q) break;
    }
    EXPECT_EQ(t.first_ending_after(q), first_end) << q;
  }
  EXPECT_EQ(t.duration_sum(0, t.size()), t.duration_sum(0, 20000) + t.duration_sum(20000, t.size()));
}

TEST(TrackLod, BucketsHoldTheBusyTimeOfEachKind) {
  std::vector<Event> v = lod_events(0);
  TrackLod lod;
  for (const auto& e : v) lod.add(e.start_ns, e.end_ns, e.kind);
  expect_buckets_hold(lod, v, "short run");
  // Far beyond 1 us x kMaxBuckets: forces coarsening.
  Event late = ev(std::int64_t{1} << 35, (std::int64_t{1} << 35) + 777);
  late.kind = EventKind::Backward;
  const int shift = lod.shift();
  lod.add(late.start_ns, late.end_ns, late.kind);
  v.push_back(late);
  EXPECT_GT(lod.shift(), shift);
  expect_buckets_hold(lod, v, "after coarsening");
}

// A real run stamps steady-clock ns (days since boot): the buckets count
// from just before its first event, not from 0, so they stay fine.
TEST(TrackLod, CountsFromTheFirstEventNotFromZero) {
  const std::int64_t boot = std::int64_t{3} * 86400 * 1000000000;
  std::vector<Event> v = lod_events(boot);
  TrackLod lod;
  for (const auto& e : v) lod.add(e.start_ns, e.end_ns, e.kind);
  EXPECT_LE(lod.origin(), boot);
  EXPECT_GT(lod.origin(), boot - 10'000'000);
  EXPECT_LE(lod.shift(), 14);  // same width as a run starting at 0
  expect_buckets_hold(lod, v, "steady clock");
}

// No event covers more than kMaxSpan finest buckets, so an event costs a
// bounded number of bucket updates however fine the buckets started.
TEST(TrackLod, AnEventCoversAtMostMaxSpanBuckets) {
  TrackLod lod;
  lod.add(0, 1000, EventKind::Forward);
  const int fine = lod.shift();
  lod.add(2'000'000, 52'000'000, EventKind::Backward);  // 50 ms
  EXPECT_GT(lod.shift(), fine);
  EXPECT_LT((50'000'000 >> lod.shift()), TrackLod::kMaxSpan + 1);
  expect_buckets_hold(lod, {ev(0, 1000), [] { Event e = ev(2'000'000, 52'000'000); e.kind = EventKind::Backward; return e; }()},
                      "long event");
}

// The worker-built index holds what a TrackLod fed directly holds, per
// (stage, row); clear() drops everything, queued work included.
TEST(TrackLod, CoarseningKeepsThePyramidAndNeverReallocates) {
  // A run growing past kMaxBuckets many times over: every level stays the
  // pairwise sum of the one below, and the buckets stay where they are (a
  // reallocation per coarsening, in step on every track, held up frames).
  TrackLod lod;
  std::mt19937 rng(3);
  std::int64_t t = 0;
  lod.add(0, 500, EventKind::Forward);
  const TrackLod::Bucket* level0 = lod.level(0).data();
  const int shift0 = lod.shift();
  double total = 500;
  for (int i = 0; i < 20000; ++i) {
    t += 200 + static_cast<std::int64_t>(rng() % 50000);
    const std::int64_t d = 1 + static_cast<std::int64_t>(rng() % 3000);
    lod.add(t, t + d, i % 3 ? EventKind::Forward : EventKind::Backward);
    total += static_cast<double>(d);
  }
  EXPECT_GT(lod.shift(), shift0 + 3);
  EXPECT_EQ(lod.level(0).data(), level0);
  for (int l = 1; l < lod.levels(); ++l) {
    const auto& fine = lod.level(l - 1);
    const auto& coarse = lod.level(l);
    ASSERT_EQ(coarse.size(), (fine.size() + 1) / 2) << l;
    for (std::size_t b = 0; b < coarse.size(); ++b)
      for (int k = 0; k < TrackLod::kSlots; ++k) {
        const double want = fine[2 * b][k] + (2 * b + 1 < fine.size() ? fine[2 * b + 1][k] : 0);
        ASSERT_DOUBLE_EQ(coarse[b][k], want) << "level " << l << " bucket " << b;
      }
  }
  const auto& top = lod.level(lod.levels() - 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_DOUBLE_EQ(top[0][0] + top[0][1], total);
}

TEST(LodIndex, WorkerBuildsTheSameBucketsAsADirectTrackLod) {
  std::vector<Event> v = lod_events(1000);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i].stage = static_cast<int>(i % 3);
    if (i % 7 == 0) v[i].kind = EventKind::Send;  // network row
  }
  LodIndex index;
  std::atomic<int> updates{0};
  QObject::connect(&index, &LodIndex::updated, [&] { ++updates; });
  for (std::size_t i = 0; i < v.size(); i += 500)
    index.add(std::vector<Event>(v.begin() + static_cast<long>(i), v.begin() + static_cast<long>(std::min(v.size(), i + 500))));
  index.waitIdle();
  EXPECT_TRUE(index.idle());
  EXPECT_GE(updates, 1);  // direct connection: emitted on the worker
  for (int s = 0; s < 3; ++s)
    for (TrackRow row : {TrackRow::Compute, TrackRow::Network}) {
      std::vector<Event> mine;
      TrackLod direct;
      for (const auto& e : v)
        if (e.stage == s && row_of(e.kind) == row) {
          mine.push_back(e);
          direct.add(e.start_ns, e.end_ns, e.kind);
        }
      auto lock = index.lock();
      const TrackLod* built = index.lod(s, row);
      ASSERT_NE(built, nullptr);
      ASSERT_EQ(built->shift(), direct.shift());
      ASSERT_EQ(built->origin(), direct.origin());
      ASSERT_EQ(built->levels(), direct.levels());
      for (int l = 0; l < direct.levels(); ++l) ASSERT_EQ(built->level(l), direct.level(l)) << "stage " << s << " level " << l;
      expect_buckets_hold(*built, mine, "worker");
    }
  index.add(v);
  index.clear();
  index.waitIdle();
  auto lock = index.lock();
  EXPECT_EQ(index.lod(0, TrackRow::Compute), nullptr);
}

}  // namespace
}  // namespace pw::gui
