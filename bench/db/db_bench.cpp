// Recorder figures, each against a baseline run in this process:
//  - sustained events/s into SQLite (RunWriter) vs appending raw records
//    to a file, and vs one transaction per event (what batching buys);
//  - "events of stage s between t0 and t1" with the index vs a full scan;
//  - exporting a 1M-event run to a Chrome trace vs writing the same trace
//    from memory.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "bench_quick.h"
#include "core/trace/chrome_trace.h"
#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/sqlite_util.h"

using namespace pw;
using Clock = std::chrono::steady_clock;

namespace {

// Process CPU seconds (all threads): the machine may be shared, so rates
// are given per wall second and per CPU second.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Event make(std::int64_t i, int stages) {
  Event e;
  e.stage = static_cast<std::int32_t>(i % stages);
  e.kind = static_cast<EventKind>(i % 3);
  e.start_ns = (i / stages) * 10000;
  e.end_ns = e.start_ns + 9000;
  e.microbatch = static_cast<std::int32_t>(i % 32);
  e.first_layer = 0;
  e.last_layer = 5;
  e.bytes = 1 << 20;
  return e;
}

struct Recording {
  double wall = 0, cpu = 0;                // queue + commit every event (flush)
  double finish_wall = 0, finish_cpu = 0;  // status, events index, checkpoint
};

Recording record(const std::string& path, std::int64_t n, int stages, db::RunWriterOptions o) {
  o.overwrite = true;
  Recording r;
  auto t0 = Clock::now();
  double c0 = cpu_s();
  db::RunWriter w(path, {"", "bench", "run", stages}, o);
  for (std::int64_t i = 0; i < n; ++i) {
    w.on_event(make(i, stages));
    if (i % 64 == 0) w.on_memory(static_cast<int>(i % stages), make(i, stages).start_ns, i);
  }
  w.flush();
  r.wall = since(t0);
  r.cpu = cpu_s() - c0;
  auto t1 = Clock::now();
  double c1 = cpu_s();
  w.finish(RunStatus::Finished);
  r.finish_wall = since(t1);
  r.finish_cpu = cpu_s() - c1;
  return r;
}

}  // namespace

int main() {
  const std::int64_t n = bench::quick_or<std::int64_t>(50000, 1000000);
  const int stages = 8;
  std::string dir = "/tmp/pw_bench_db_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string db = dir + "/run.sqlite";

  std::printf("recorder: %lld events (+1 memory sample per 64), %d stages\n", static_cast<long long>(n), stages);
  double t_raw;
  {
    auto t0 = Clock::now();
    std::FILE* f = std::fopen((dir + "/raw.bin").c_str(), "wb");
    for (std::int64_t i = 0; i < n; ++i) {
      Event e = make(i, stages);
      std::fwrite(&e, sizeof e, 1, f);
    }
    std::fflush(f);
    fsync(fileno(f));
    std::fclose(f);
    t_raw = since(t0);
  }
  Recording rec = record(db, n, stages, {});
  const std::int64_t n_single = bench::quick_or<std::int64_t>(200, 2000);
  db::RunWriterOptions single;
  single.batch_records = 1;
  single.max_delay = std::chrono::milliseconds(0);
  Recording one = record(dir + "/single.sqlite", n_single, stages, single);
  double rate_db = n / rec.wall, rate_raw = n / t_raw, rate_single = n_single / one.wall;
  std::printf("  RunWriter (batched, WAL)        %10.0f events/s wall  (%.2f s)   target >= 500000: %s\n", rate_db, rec.wall,
              rate_db >= 500000 ? "met" : "NOT met (see CPU figure when the machine is shared)");
  std::printf("  RunWriter per CPU second        %10.0f events/CPU-s (%.2f CPU-s, writer + producer threads)\n",
              n / rec.cpu, rec.cpu);
  std::printf("  finish (events index, checkpoint)  %.2f s wall, %.2f CPU-s\n", rec.finish_wall, rec.finish_cpu);
  std::printf("  baseline: raw binary append     %10.0f events/s  -> recorder at %.2fx of raw\n", rate_raw, rate_db / rate_raw);
  std::printf("  baseline: 1 transaction/event   %10.0f events/s  -> batching is %.0fx faster\n", rate_single,
              rate_db / rate_single);
  std::printf("  file size %.1f MB (%.0f bytes/event)\n", std::filesystem::file_size(db) / 1e6,
              static_cast<double>(std::filesystem::file_size(db)) / n);

  // Range query: 1% of the run on one stage.
  {
    db::RunReader r(db);
    std::int64_t span = (n / stages) * 10000;
    std::int64_t t0 = span / 2, t1 = t0 + span / 100;
    const int reps = 20;
    std::size_t got = 0;
    auto c0 = Clock::now();
    for (int k = 0; k < reps; ++k) got = r.events(3, t0, t1).size();
    double t_idx = since(c0) / reps;
    db::Connection c(db, db::Connection::Mode::ReadOnly);
    db::Statement s(c, "SELECT stage, kind, start_ns, end_ns FROM events NOT INDEXED WHERE stage = ? AND start_ns < ? AND end_ns > ?");
    std::size_t scan = 0;
    auto c1 = Clock::now();
    for (int k = 0; k < 3; ++k) {
      scan = 0;
      s.bind(1, std::int64_t(3)).bind(2, t1).bind(3, t0);
      while (s.step()) ++scan;
    }
    double t_scan = since(c1) / 3;
    std::printf("\nrange query: events of stage 3 in 1%% of the run (%zu events)\n", got);
    std::printf("  indexed (events_by_stage_time)  %8.3f ms\n", t_idx * 1e3);
    std::printf("  baseline: full scan             %8.3f ms (%zu events) -> index %.0fx faster\n", t_scan * 1e3, scan,
                t_scan / t_idx);
    auto m0 = Clock::now();
    auto mem = r.memory(t0, t1);
    std::printf("  memory of all stages in that window: %zu samples in %.3f ms\n", mem.size(), since(m0) * 1e3);
  }

  // Export: 1M events to a Chrome trace, streamed from the database.
  {
    auto c0 = Clock::now();
    {
      db::RunReader r(db);
      std::ofstream out(dir + "/trace.json");
      ChromeTraceWriter w(out, stages, "bench");
      r.for_each_event([&](const Event& e) { w.on_event(e); });
      r.for_each_memory([&](const MemorySample& m) { w.on_memory(m.stage, m.t_ns, m.bytes); });
      w.finish();
    }
    double t_export = since(c0);
    std::vector<Event> events;
    events.reserve(n);
    for (std::int64_t i = 0; i < n; ++i) events.push_back(make(i, stages));
    auto c1 = Clock::now();
    {
      std::ofstream out(dir + "/trace_mem.json");
      ChromeTraceWriter w(out, stages, "bench");
      for (const auto& e : events) w.on_event(e);
      w.finish();
    }
    double t_mem = since(c1);
    std::printf("\nexport: %lld-event run to Chrome trace (%.0f MB)\n", static_cast<long long>(n),
                std::filesystem::file_size(dir + "/trace.json") / 1e6);
    std::printf("  from the database               %8.2f s\n", t_export);
    std::printf("  baseline: from memory           %8.2f s  -> database export at %.2fx the time\n", t_mem, t_export / t_mem);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
