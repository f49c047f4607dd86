#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <algorithm>
#include <map>

#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/sqlite_util.h"
#include "db_test_util.h"

namespace pw {
namespace {

using test::Capture;
using test::TempDir;

struct Recorded {
  Capture cap;
  SimResult result;
  PreparedJob job;
};

// Simulates a job while recording it: what the simulator emitted is in
// `cap`, the database at `path`.
Recorded record(const std::string& job_file, const std::string& path) {
  Recorded r{{}, {}, prepare_job(load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/" + job_file))};
  db::RunWriterOptions o;
  o.batch_records = 64;  // many transactions even for a small run
  db::RunWriter w(path, {"", r.job.job.name, "simulate", r.job.job.pipeline.stages}, o);
  w.job(r.job.job.raw);
  w.profile(profile_to_json(r.job.profile));
  w.plan(1, 0, "initial plan", to_json(r.job.plan));
  r.cap.next = &w;
  r.result = simulate(r.job.sim_input(), &r.cap);
  w.finish(RunStatus::Finished);
  EXPECT_EQ(w.stats().events, r.cap.events.size());
  return r;
}

TEST(RunDb, SimulatedRunRoundTrips) {
  TempDir d;
  auto path = d.file("run.sqlite");
  auto rec = record("gpt32-8gpu.json", path);
  ASSERT_GT(rec.cap.events.size(), 100u);
  ASSERT_EQ(rec.cap.events.size(), rec.result.events);

  db::RunReader r(path);
  EXPECT_EQ(r.run().status, RunStatus::Finished);
  EXPECT_EQ(r.run().name, rec.job.job.name);
  EXPECT_EQ(r.run().stages, rec.job.job.pipeline.stages);
  EXPECT_EQ(r.run().schema_version, "1.4");
  EXPECT_GE(r.run().ended_unix_ns, r.run().started_unix_ns);
  EXPECT_EQ(r.job(), rec.job.job.raw);
  EXPECT_EQ(r.profile(), profile_to_json(rec.job.profile));
  ASSERT_EQ(r.plans().size(), 1u);
  EXPECT_EQ(r.plans()[0].plan, to_json(rec.job.plan));

  // Every event, in order, field by field.
  ASSERT_EQ(r.event_count(), static_cast<std::int64_t>(rec.cap.events.size()));
  size_t i = 0;
  r.for_each_event([&](const Event& e) {
    ASSERT_LT(i, rec.cap.events.size());
    EXPECT_TRUE(test::same(e, rec.cap.events[i])) << "event " << i;
    ++i;
  });
  EXPECT_EQ(i, rec.cap.events.size());
  size_t m = 0;
  r.for_each_memory([&](const MemorySample& s) {
    ASSERT_LT(m, rec.cap.memory.size());
    EXPECT_EQ(s.t_ns, rec.cap.memory[m].t_ns);
    EXPECT_EQ(s.stage, rec.cap.memory[m].stage);
    EXPECT_EQ(s.bytes, rec.cap.memory[m].bytes);
    EXPECT_EQ(s.budget, -1);
    ++m;
  });
  EXPECT_EQ(m, rec.cap.memory.size());

  // Aggregates against sums computed here from the emitted stream.
  struct Agg {
    std::uint64_t n = 0;
    std::int64_t first = INT64_MAX, last = INT64_MIN, busy = 0, dur = 0, bytes = 0, peak = 0;
  };
  std::map<int, Agg> want;
  for (const auto& e : rec.cap.events) {
    auto& a = want[e.stage];
    ++a.n;
    a.first = std::min(a.first, e.start_ns);
    a.last = std::max(a.last, e.end_ns);
    a.dur += e.end_ns - e.start_ns;
    a.bytes += e.bytes;
    if (e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::BackwardInput ||
        e.kind == EventKind::BackwardWeight || e.kind == EventKind::Recompute || e.kind == EventKind::OptimizerStep)
      a.busy += e.end_ns - e.start_ns;
  }
  for (const auto& s : rec.cap.memory) want[s.stage].peak = std::max(want[s.stage].peak, s.bytes);
  auto stats = r.stage_stats();
  ASSERT_EQ(stats.size(), want.size());
  for (const auto& s : stats) {
    const auto& a = want[s.stage];
    EXPECT_EQ(s.events, a.n) << "stage " << s.stage;
    EXPECT_EQ(s.first_start_ns, a.first);
    EXPECT_EQ(s.last_end_ns, a.last);
    EXPECT_EQ(s.busy_ns, a.busy);
    EXPECT_EQ(s.duration_ns, a.dur);
    EXPECT_EQ(s.bytes, a.bytes);
    EXPECT_EQ(s.peak_memory_bytes, a.peak);
    EXPECT_EQ(static_cast<std::uint64_t>(s.peak_memory_bytes), rec.result.stages[s.stage].peak_memory_bytes);
  }
}

TEST(RunDb, RangeQueriesMatchBruteForce) {
  TempDir d;
  auto path = d.file("run.sqlite");
  auto rec = record("bert24-4gpu.json", path);
  db::RunReader r(path);
  std::int64_t span = 0;
  for (const auto& e : rec.cap.events) span = std::max(span, e.end_ns);
  for (int stage = 0; stage < rec.job.job.pipeline.stages; ++stage)
    for (auto [f0, f1] : {std::pair{0.0, 1.0}, {0.2, 0.25}, {0.5, 0.9}, {0.99, 1.5}}) {
      std::int64_t t0 = static_cast<std::int64_t>(span * f0), t1 = static_cast<std::int64_t>(span * f1);
      std::vector<Event> want;
      for (const auto& e : rec.cap.events)
        if (e.stage == stage && e.start_ns < t1 && e.end_ns > t0) want.push_back(e);
      std::stable_sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.start_ns < b.start_ns; });
      auto got = r.events(stage, t0, t1);
      ASSERT_EQ(got.size(), want.size()) << "stage " << stage << " [" << t0 << ", " << t1 << ")";
      // Ties in start time may come in either order: compare as multisets by start.
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].start_ns, want[i].start_ns);
      size_t mem_want = 0;
      for (const auto& s : rec.cap.memory) mem_want += s.t_ns >= t0 && s.t_ns < t1;
      auto mem = r.memory(t0, t1);
      EXPECT_EQ(mem.size(), mem_want);
      EXPECT_TRUE(std::is_sorted(mem.begin(), mem.end(), [](auto& a, auto& b) { return a.t_ns < b.t_ns; }));
    }
  // The planner uses the index for both range queries.
  db::Connection c(path, db::Connection::Mode::ReadOnly);
  auto plan_of = [&](const std::string& q) {
    db::Statement s(c, "EXPLAIN QUERY PLAN " + q);
    std::string all;
    while (s.step()) all += s.text(3) + "\n";
    return all;
  };
  EXPECT_NE(plan_of("SELECT * FROM events WHERE stage = 1 AND start_ns >= 5 AND start_ns < 9").find("events_by_stage_time"),
            std::string::npos);
  EXPECT_NE(plan_of("SELECT * FROM memory WHERE t_ns >= 5 AND t_ns < 9 ORDER BY t_ns").find("memory_by_time"),
            std::string::npos);
}

TEST(RunDb, EveryRecordKindRoundTrips) {
  TempDir d;
  auto path = d.file("run.sqlite");
  {
    db::RunWriter w(path, {"abc123", "job", "run", 2});
    MemorySample m;
    m.t_ns = 5;
    m.stage = 1;
    m.bytes = 100;
    m.parameters = 10;
    m.activations = 90;
    m.budget = 1000;
    w.memory(m);
    w.throughput({7, 3, 123.5, 45.25});
    w.migration({10, 20, 4, 0, 1, 4096, 2});
    w.subnet(3, nlohmann::json{{"choices", {1, 0, 2}}});
    w.subnet_state({11, 3, 1, SubnetPhase::Blocked});
    w.subnet_edge({12, 15, 3, 2, 1, 7});
    w.log({13, LogLevel::Warning, "worker 1", "a \"quoted\" message"});
    w.plan(2, 9, "replan", nlohmann::json{{"planner", "vpipe"}});
    w.endpoint("telemetry", "tcp://127.0.0.1:5555");
    w.summary({{"x", 1}});
    w.finish(RunStatus::Stopped, "stopped by user");
  }
  db::RunReader r(path);
  EXPECT_EQ(r.run().run_id, "abc123");
  EXPECT_EQ(r.run().source, "run");
  EXPECT_EQ(r.run().status, RunStatus::Stopped);
  EXPECT_EQ(r.run().reason, "stopped by user");
  auto mem = r.memory(0, 100);
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].parameters, 10);
  EXPECT_EQ(mem[0].optimizer, -1);
  EXPECT_EQ(mem[0].activations, 90);
  EXPECT_EQ(mem[0].budget, 1000);
  ASSERT_EQ(r.throughput().size(), 1u);
  EXPECT_EQ(r.throughput()[0].iteration, 3);
  EXPECT_DOUBLE_EQ(r.throughput()[0].samples_per_s, 123.5);
  ASSERT_EQ(r.migrations().size(), 1u);
  EXPECT_EQ(r.migrations()[0].bytes, 4096);
  EXPECT_EQ(r.migrations()[0].plan_version, 2);
  EXPECT_EQ(r.subnets().at(3)["choices"][2], 2);
  ASSERT_EQ(r.subnet_states().size(), 1u);
  EXPECT_EQ(r.subnet_states()[0].phase, SubnetPhase::Blocked);
  ASSERT_EQ(r.subnet_edges().size(), 1u);
  EXPECT_EQ(r.subnet_edges()[0].resolved_ns, 15);
  EXPECT_EQ(r.subnet_edges()[0].layer, 7);
  ASSERT_EQ(r.logs().size(), 1u);
  EXPECT_EQ(r.logs()[0].level, LogLevel::Warning);
  EXPECT_EQ(r.logs()[0].message, "a \"quoted\" message");
  EXPECT_EQ(r.plans().at(0).version, 2);
  EXPECT_EQ(r.endpoints().at("telemetry"), "tcp://127.0.0.1:5555");
  EXPECT_EQ(r.summary()["x"], 1);
}

// Schema 1.2 (issue 39): each event's data-parallel replica, and the
// all-reduce kind, round-trip through the file and its three read paths.
TEST(RunDb, AllReduceEventWithReplicaRoundTrips) {
  TempDir d;
  auto path = d.file("run.sqlite");
  Event ar;
  ar.stage = 1;
  ar.replica = 3;
  ar.kind = EventKind::AllReduce;
  ar.start_ns = 1000;
  ar.end_ns = 4500;
  ar.bytes = 25 << 20;  // one 25 MiB bucket
  ar.first_layer = 4;
  ar.last_layer = 7;
  Event fwd = test::synthetic_event(0, 2);  // replica 0
  {
    db::RunWriter w(path, {"", "dp", "run", 2});
    w.on_event(fwd);
    w.on_event(ar);
    w.finish(RunStatus::Finished);
  }
  db::RunReader r(path);
  EXPECT_EQ(r.run().schema_version, "1.4");
  EXPECT_EQ(r.replicas(), 4);
  std::vector<Event> all;
  r.for_each_event([&](const Event& e) { all.push_back(e); });
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(test::same(all[0], fwd));
  EXPECT_TRUE(test::same(all[1], ar));
  EXPECT_EQ(all[1].replica, 3);
  EXPECT_EQ(all[1].kind, EventKind::AllReduce);
  auto ranged = r.events(1, 0, 10000);
  ASSERT_EQ(ranged.size(), fwd.stage == 1 ? 2u : 1u);
  EXPECT_TRUE(test::same(ranged.back(), ar));
  std::int64_t after = 1;
  auto followed = r.events_after(after, 10);
  ASSERT_EQ(followed.size(), 1u);
  EXPECT_TRUE(test::same(followed[0], ar));
  EXPECT_EQ(after, 2);
  // SQL by hand sees the column too (docs/database.md).
  db::Connection c(path, db::Connection::Mode::ReadOnly);
  db::Statement q(c, "SELECT replica, kind FROM events WHERE kind = 12");
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.int64(0), 3);
}

TEST(RunDb, FileBeforeReplicasReadsAsReplicaZero) {
  TempDir d;
  auto path = d.file("old.sqlite");
  {
    db::RunWriter w(path, {"", "old", "run", 4});
    for (int i = 0; i < 10; ++i) w.on_event(test::synthetic_event(i));
    w.finish(RunStatus::Finished);
  }
  {
    // What a 1.1 writer left: no events.replica, schema_minor 1.
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("ALTER TABLE events DROP COLUMN replica; UPDATE meta SET value = '1' WHERE key = 'schema_minor';");
  }
  db::RunReader r(path);
  EXPECT_EQ(r.run().schema_version, "1.1");
  EXPECT_EQ(r.replicas(), 1);
  int n = 0;
  r.for_each_event([&](const Event& e) {
    EXPECT_TRUE(test::same(e, test::synthetic_event(n))) << "event " << n;
    ++n;
  });
  EXPECT_EQ(n, 10);
  EXPECT_EQ(r.events(2, 0, INT64_MAX / 4).size(), 2u);
}

TEST(RunDb, ReplicaOutOfRangeIsRefusedNamingTheColumn) {
  TempDir d;
  auto path = d.file("bad.sqlite");
  {
    db::RunWriter w(path, {"", "bad", "run", 1});
    w.on_event(test::synthetic_event(0, 1));
    w.finish(RunStatus::Finished);
  }
  {
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("UPDATE events SET replica = 40000;");
  }
  try {
    db::RunReader r(path);
    FAIL() << "opened a file with replica 40000";
  } catch (const db::DbError& e) {
    EXPECT_NE(std::string(e.what()).find("events.replica spans 40000..40000"), std::string::npos) << e.what();
  }
}

// Schema 1.3 (issue 39): each memory sample's replica, through the file
// and both read paths; a 1.2 file (no memory.replica) reads as replica 0;
// a replica beyond 16 bits is refused naming the column.
TEST(RunDb, MemorySampleWithReplicaRoundTrips) {
  TempDir d;
  auto path = d.file("run.sqlite");
  std::vector<MemorySample> samples;
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 2; ++s) {
      MemorySample m;
      m.t_ns = 1000 * (s + 1) + r;
      m.stage = s;
      m.replica = static_cast<std::int16_t>(r);
      m.bytes = 1000000 + 1000 * s + r;  // each (stage, replica) its own figure
      m.parameters = 400000;
      m.activations = 600000 + 1000 * s + r;
      m.budget = 1 << 30;
      samples.push_back(m);
    }
  {
    db::RunWriter w(path, {"", "dp", "run", 2});
    for (const auto& m : samples) w.memory(m);
    w.finish(RunStatus::Finished);
  }
  db::RunReader r(path);
  EXPECT_EQ(r.run().schema_version, "1.4");
  std::vector<MemorySample> all;
  r.for_each_memory([&](const MemorySample& m) { all.push_back(m); });
  ASSERT_EQ(all.size(), samples.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].replica, samples[i].replica) << i;
    EXPECT_EQ(all[i].stage, samples[i].stage) << i;
    EXPECT_EQ(all[i].bytes, samples[i].bytes) << i;
    EXPECT_EQ(all[i].activations, samples[i].activations) << i;
  }
  auto one = r.memory(0, 1 << 20, 1, 1);  // stage 1 of replica 1
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].bytes, 1001001);
  EXPECT_EQ(r.memory(0, 1 << 20, -1, 0).size(), 2u);
  EXPECT_EQ(r.memory(0, 1 << 20).size(), 4u);

  {
    // What a 1.2 writer left: no memory.replica, schema_minor 2.
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("ALTER TABLE memory DROP COLUMN replica; UPDATE meta SET value = '2' WHERE key = 'schema_minor';");
  }
  db::RunReader old(path);
  EXPECT_EQ(old.run().schema_version, "1.2");
  int n = 0;
  old.for_each_memory([&](const MemorySample& m) {
    EXPECT_EQ(m.replica, 0);
    ++n;
  });
  EXPECT_EQ(n, 4);
  EXPECT_EQ(old.memory(0, 1 << 20, -1, 0).size(), 4u);
  EXPECT_TRUE(old.memory(0, 1 << 20, -1, 1).empty());

  auto bad = d.file("bad.sqlite");
  {
    db::RunWriter w(bad, {"", "bad", "run", 1});
    w.memory(samples[0]);
    w.finish(RunStatus::Finished);
  }
  {
    db::Connection c(bad, db::Connection::Mode::ReadWrite);
    c.exec("UPDATE memory SET replica = 40000;");
  }
  try {
    db::RunReader r2(bad);
    FAIL() << "opened a file with memory.replica 40000";
  } catch (const db::DbError& e) {
    EXPECT_NE(std::string(e.what()).find("memory.replica spans 40000..40000"), std::string::npos) << e.what();
  }
}

// Schema 1.4: a sample's high-water mark since the stage's previous one.
// A real run samples at iteration ends, after its activations are freed:
// the stage's peak is the largest of its samples' peaks (and bytes), not
// the largest resident total at an iteration end. A 1.3 file (no
// memory.peak) reads peak -1 and its stage peak is the largest sample.
TEST(RunDb, MemoryPeakIsTheIterationsHighWaterMark) {
  TempDir d;
  auto path = d.file("run.sqlite");
  std::vector<MemorySample> samples;
  for (int it = 0; it < 3; ++it)
    for (int s = 0; s < 2; ++s) {
      MemorySample m;
      m.t_ns = 1000 * (it + 1) + s;
      m.stage = s;
      m.bytes = 1000000 + 10 * it;           // iteration ends: the activations are gone
      m.peak = 5000000 + 100000 * s + it;    // within the iteration they were held
      samples.push_back(m);
    }
  samples.back().peak = -1;  // a sample without one (NULL) falls back on its bytes
  {
    db::RunWriter w(path, {"", "peaks", "run", 2});
    for (const auto& m : samples) w.memory(m);
    w.finish(RunStatus::Finished);
  }
  {
    db::RunReader r(path);
    std::vector<MemorySample> all;
    r.for_each_memory([&](const MemorySample& m) { all.push_back(m); });
    ASSERT_EQ(all.size(), samples.size());
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].peak, samples[i].peak) << i;
    std::map<int, std::int64_t> peak;
    for (const auto& s : r.stage_stats()) peak[s.stage] = s.peak_memory_bytes;
    EXPECT_EQ(peak[0], 5000002);  // iteration 2's, by hand from the samples above
    EXPECT_EQ(peak[1], 5100001);  // iteration 2 has no peak: iteration 1's
  }
  {
    // What a 1.3 writer left: no memory.peak, schema_minor 3.
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("ALTER TABLE memory DROP COLUMN peak; UPDATE meta SET value = '3' WHERE key = 'schema_minor';");
  }
  db::RunReader old(path);
  EXPECT_EQ(old.run().schema_version, "1.3");
  old.for_each_memory([&](const MemorySample& m) { EXPECT_EQ(m.peak, -1); });
  for (const auto& s : old.stage_stats()) EXPECT_EQ(s.peak_memory_bytes, 1000020) << s.stage;
}

TEST(RunDb, LiveReaderSeesCommittedBatches) {
  TempDir d;
  auto path = d.file("run.sqlite");
  db::RunWriter w(path, {"", "live", "run", 4});
  for (int i = 0; i < 1000; ++i) w.on_event(test::synthetic_event(i));
  w.flush();
  db::RunReader r(path);
  EXPECT_EQ(r.run().status, RunStatus::Running);
  std::int64_t after = 0;
  EXPECT_EQ(r.events_after(after, 600).size(), 600u);
  EXPECT_EQ(r.events_after(after, 600).size(), 400u);
  for (int i = 1000; i < 1500; ++i) w.on_event(test::synthetic_event(i));
  w.flush();
  // Before finish() the events index does not exist yet: range queries scan, same answers.
  auto live = r.events(2, 100000, 200000);
  std::size_t want = 0;
  for (int i = 0; i < 1000; ++i) {
    auto e = test::synthetic_event(i);
    want += e.stage == 2 && e.start_ns < 200000 && e.end_ns > 100000;
  }
  EXPECT_EQ(live.size(), want);
  auto more = r.events_after(after, 10000);
  ASSERT_EQ(more.size(), 500u);
  EXPECT_TRUE(test::same(more[0], test::synthetic_event(1000)));
  w.finish(RunStatus::Finished);
  r.refresh();
  EXPECT_EQ(r.run().status, RunStatus::Finished);
}

TEST(RunDb, WriterWithoutFinishMarksFailed) {
  TempDir d;
  auto path = d.file("run.sqlite");
  { db::RunWriter w(path, {"", "x", "run", 1}); w.on_event(test::synthetic_event(0)); }
  db::RunReader r(path);
  EXPECT_EQ(r.run().status, RunStatus::Failed);
  EXPECT_NE(r.run().reason.find("without a final status"), std::string::npos);
  EXPECT_EQ(r.event_count(), 1);
}

TEST(RunDb, WriterRefusesToOverwriteUnlessAsked) {
  TempDir d;
  auto path = d.file("run.sqlite");
  { db::RunWriter(path, {"", "x", "run", 1}).finish(RunStatus::Finished); }
  EXPECT_THROW(db::RunWriter(path, {"", "x", "run", 1}), db::DbError);
  db::RunWriterOptions o;
  o.overwrite = true;
  { db::RunWriter(path, {"new", "x", "run", 1}, o).finish(RunStatus::Finished); }
  EXPECT_EQ(db::RunReader(path).run().run_id, "new");
  EXPECT_THROW(db::RunWriter(d.file("no/such/dir/x.sqlite"), {"", "x", "run", 1}), db::DbError);
}

TEST(RunDb, OverwriteNeverReplacesAFileThatIsNotARun) {
  TempDir d;
  db::RunWriterOptions o;
  o.overwrite = true;
  auto notes = d.file("notes.txt");
  { std::ofstream(notes) << "my notes\n"; }
  EXPECT_THROW(db::RunWriter(notes, {"", "x", "run", 1}, o), db::DbRefused);
  std::ifstream in(notes);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "my notes");
  auto empty = d.file("empty.sqlite");
  { std::ofstream(empty).flush(); }
  EXPECT_THROW(db::RunWriter(empty, {"", "x", "run", 1}, o), db::DbRefused);
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);
}

TEST(RunDb, SecondWriterIsRefusedWhileTheFirstRecords) {
  TempDir d;
  auto path = d.file("run.sqlite");
  db::RunWriterOptions o;
  o.overwrite = true;
  db::RunWriter first(path, {"first", "x", "run", 1});
  first.on_event(test::synthetic_event(0));
  first.flush();
  try {
    db::RunWriter second(path, {"second", "x", "run", 1}, o);
    FAIL() << "a second writer was let in";
  } catch (const db::DbRefused& e) {
    EXPECT_NE(std::string(e.what()).find("another pipewright process is recording"), std::string::npos) << e.what();
  }
  first.finish(RunStatus::Finished);
  db::RunReader r(path);
  EXPECT_EQ(r.run().run_id, "first");
  EXPECT_EQ(r.event_count(), 1);
}

TEST(RunDb, LockIsReleasedWithTheWriter) {
  TempDir d;
  auto path = d.file("run.sqlite");
  { db::RunWriter(path, {"a", "x", "run", 1}).finish(RunStatus::Finished); }
  db::RunWriterOptions o;
  o.overwrite = true;
  { db::RunWriter(path, {"b", "x", "run", 1}, o).finish(RunStatus::Interrupted, "interrupted by SIGINT"); }
  db::RunReader r(path);
  EXPECT_EQ(r.run().run_id, "b");
  EXPECT_EQ(r.run().status, RunStatus::Interrupted);
  EXPECT_EQ(r.run().reason, "interrupted by SIGINT");
}

TEST(RunDb, RecordsAfterFinishThrow) {
  TempDir d;
  db::RunWriter w(d.file("run.sqlite"), {"", "x", "run", 1});
  w.finish(RunStatus::Finished);
  EXPECT_THROW(w.on_event(test::synthetic_event(0)), db::DbError);
}

}  // namespace
}  // namespace pw
