// pw_bench_gui: the studio's figures, each against a baseline measured in
// the same process.
//   1. Timeline replot with ~1M bars, median ms, zoomed out and zoomed in
//      (target <= 16 ms); baselines: the same plottable folding bar by bar
//      (no level-of-detail buckets), and drawing every bar from the first
//      (no binary search, no folding).
//   2. Open a ~1M-event run to first paint (target <= 1.5 s); baseline:
//      just reading the events (database: RunReader; else: the simulator).
//   3. Live ingestion: the highest offered rate (events/s) at which the
//      redraw interval stays <= 50 ms (p99), target >= 100k events/s, with
//      the timeline alone; baseline for the worst tick: track columns in
//      std::vectors (whose doubling copies the whole track at once).
//   4. The same rates with the studio's whole main window following the run.
// Run with QT_QPA_PLATFORM=offscreen on a machine without a display.
#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <qcustomplot.h>
#include <thread>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"
#include "gui/models/run_feeder.h"
#include "gui/models/run_model.h"
#include "gui/models/run_source.h"
#include "gui/models/simulated_iteration.h"
#include "gui/models/simulated_run_source.h"
#include "gui/models/track_lod.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/timeline_plottable.h"
#include "gui/widgets/timeline_view.h"
#ifdef PW_STUDIO_HAVE_DB
#include "db/run_reader.h"
#include "db/run_writer.h"
#include "gui/sources/db_run_source.h"
#endif

using namespace pw;
using namespace pw::gui;

namespace {

JobSpec bench_job() {
  return parse_job(nlohmann::json::parse(R"({"name": "bench", "model": {"kind": "uniform", "layers": 32, "fwd_ms": 1,
      "bwd_ms": 2, "activation_mb": 16, "param_mb": 8, "output_mb": 4}, "training": {"batch_size": 32,
      "microbatch_size": 1}, "cluster": {"devices": 8, "device": "v100-32g"}, "pipeline": {"stages": 8}})"));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double replot_ms(TimelineView& view, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    QElapsedTimer e;
    e.start();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    t.push_back(e.nsecsElapsed() / 1e6);
  }
  return median(t);
}

// Publishes synthetic events at a fixed rate from its worker thread.
class RateSource final : public RunSource {
 public:
  RateSource(const SimulatedIteration& it, double rate) : it_(it), rate_(rate) {}
  ~RateSource() override { stop(); }
  QString description() const override { return QStringLiteral("rate"); }

 protected:
  void run() override {
    RunBatch head;
    head.info = it_.info;
    publish(std::move(head));
    auto t0 = std::chrono::steady_clock::now();
    std::size_t sent = 0, k = 0;
    std::int64_t off = 0;
    while (!stopRequested()) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::size_t due = static_cast<std::size_t>(elapsed * rate_);
      RunBatch b;
      while (sent < due) {
        Event e = it_.events[k];
        e.start_ns += off;
        e.end_ns += off;
        b.events.push_back(e);
        ++sent;
        if (++k == it_.events.size()) {
          k = 0;
          off += it_.period;
        }
      }
      if (!b.events.empty()) publish(std::move(b));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  const SimulatedIteration& it_;
  double rate_;
};

struct LiveFigures {
  double rate = 0, ingested = 0, p50 = 0, p99 = 0, max = 0;
  std::size_t frames = 0;
  bool ok = false;
};

// Drives the event loop for 2.5 s (quick: 0.5 s) while `src` publishes at
// `rate` and records the interval between the plot's replots, as a user
// sees them.
LiveFigures measure_live(QCustomPlot* plot, const RunModel& model, RunSource& src, double rate) {
  const qint64 duration_ms = bench::quick_or(500, 2500);
  std::vector<double> gaps;
  QElapsedTimer since;
  since.start();
  bool first = true;
  auto conn = QObject::connect(plot, &QCustomPlot::afterReplot, [&] {
    if (!first) gaps.push_back(since.nsecsElapsed() / 1e6);
    if (getenv("PW_BENCH_TRACE") && !first && since.nsecsElapsed() > 40e6)
      std::printf("    late frame #%zu: %.1f ms\n", gaps.size(), since.nsecsElapsed() / 1e6);
    first = false;
    since.restart();
  });
  src.start();
  QElapsedTimer run;
  run.start();
  while (run.elapsed() < duration_ms) {
    QApplication::processEvents(QEventLoop::AllEvents, 5);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  src.stop();
  QObject::disconnect(conn);
  LiveFigures f;
  f.rate = rate;
  double secs = run.nsecsElapsed() / 1e9;
  std::sort(gaps.begin(), gaps.end());
  f.frames = gaps.size();
  f.p50 = gaps.empty() ? 0 : gaps[gaps.size() / 2];
  f.p99 = gaps.empty() ? 0 : gaps[std::min(gaps.size() - 1, gaps.size() * 99 / 100)];
  f.max = gaps.empty() ? 0 : gaps.back();
  f.ingested = model.eventCount() / secs;
  f.ok = f.p99 <= 50 && f.ingested >= 0.9 * rate;
  return f;
}

void print_live(const LiveFigures& f, double max_drain_ms) {
  std::printf("  offered %9.0f ev/s: ingested %9.0f ev/s, redraw interval p50 %5.1f ms p99 %5.1f ms max %5.1f ms (%zu frames), "
              "max drain %.1f ms %s\n",
              f.rate, f.ingested, f.p50, f.p99, f.max, f.frames, max_drain_ms, f.ok ? "ok" : "(over budget)");
}

}  // namespace

// PW_BENCH_TRACE=1: name every GUI-thread event over 8 ms and every live
// frame later than 40 ms (what made the live figures' late frames).
struct TimingApp : QApplication {
  using QApplication::QApplication;
  bool notify(QObject* o, QEvent* e) override {
    if (!getenv("PW_BENCH_TRACE")) return QApplication::notify(o, e);
    QElapsedTimer t;
    t.start();
    bool r = QApplication::notify(o, e);
    if (t.nsecsElapsed() > 8e6)
      std::printf("      slow event %d to %s '%s': %.1f ms\n", static_cast<int>(e->type()), o->metaObject()->className(),
                  qPrintable(o->objectName()), t.nsecsElapsed() / 1e6);
    return r;
  }
};

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
  TimingApp app(argc, argv);
  const JobSpec job = bench_job();
  SimulatedIteration it = simulate_iteration(prepare_job(job));
  // Quick: 50k events instead of 1M, fewer replots per median.
  const int iterations = static_cast<int>(bench::quick_or<std::size_t>(50'000, 1'000'000) / it.events.size()) + 1;
  const int reps_fast = bench::quick_or(3, 31), reps = bench::quick_or(2, 15), reps_naive_out = bench::quick_or(1, 3);
  std::printf("pw_bench_gui: %zu events per iteration, %d iterations\n", it.events.size(), iterations);

  // 1. Replot.
  RunModel model;
  model.append(repeat_iteration(it, iterations));
  model.waitForLod();  // the buckets are built on their worker
  TimelineView view;
  view.resize(1600, 600);
  view.show();
  view.setRun(&model);
  view.setFollow(false);
  QApplication::processEvents();
  std::printf("\n[1] timeline replot, %zu bars, 1600x600\n", model.eventCount());
  const std::int64_t mid = (model.beginNs() + model.endNs()) / 2;
  const std::int64_t narrow = std::max<std::int64_t>(1, (model.endNs() - model.beginNs()) / 2000);
  for (int zoomed = 0; zoomed < 2; ++zoomed) {
    if (zoomed) view.setVisibleRange(mid, mid + narrow);
    else view.zoomToFit();
    auto* bars = view.bars();
    bars->setNaive(false);
    bars->setUseLod(true);
    double fast = replot_ms(view, reps_fast);
    std::size_t rects = bars->lastDrawnRects(), folds = bars->lastFoldedBlocks(), lod_rows = bars->lastLodRows();
    // The plottable's own share: the same frame with no bars at all.
    bars->setVisible(false);
    double frame = replot_ms(view, reps);
    bars->setVisible(true);
    bars->setUseLod(false);
    double fold = replot_ms(view, reps);
    bars->setUseLod(true);
    bars->setNaive(true);
    double naive = replot_ms(view, zoomed ? reps : reps_naive_out);
    bars->setNaive(false);
    std::printf("  %-11s median %7.2f ms (target <= 16)  [%zu bars drawn, %zu folded blocks, %zu of 24 rows from buckets]\n"
                "              axes/grid/frame alone %.2f ms; bars %.2f ms\n"
                "              baseline: per-bar folding, no buckets %.2f ms (%.1fx); draw all, linear scan %.2f ms (%.1fx)\n",
                zoomed ? "zoomed in" : "zoomed out", fast, rects, folds, lod_rows, frame, fast - frame, fold,
                fold / std::max(fast, 1e-6), naive, naive / std::max(fast, 1e-6));
  }
  {
    // What the buckets cost: memory, and time per event at ingestion.
    std::size_t bytes = 0;
    auto lock = model.lod().lock();
    for (int s = 0; s < model.stageCount(); ++s)
      for (int r = 0; r < kTrackRowCount; ++r) {
        const TrackLod* lod = model.lod().lod(s, static_cast<TrackRow>(r));
        for (int l = 0; lod && l < lod->levels(); ++l) bytes += lod->level(l).size() * sizeof(TrackLod::Bucket);
      }
    lock.unlock();
    RunBatch again = repeat_iteration(it, iterations);
    std::vector<TrackLod> lods(8);
    QElapsedTimer e;
    e.start();
    for (const auto& ev : again.events) lods[ev.stage % 8].add(ev.start_ns, ev.end_ns, ev.kind);
    std::printf("  buckets: %.1f MB for the run; building them %.1f ns/event on their worker thread\n", bytes / 1048576.0,
                e.nsecsElapsed() / static_cast<double>(again.events.size()));
  }

  // 2. Open to first paint.
  std::printf("\n[2] open a %zu-event run to first paint\n", model.eventCount());
#ifdef PW_STUDIO_HAVE_DB
  QTemporaryDir dir;
  const std::string path = dir.filePath("bench.db").toStdString();
  {
    db::RunWriter w(path, {.name = "bench", .stages = it.info.stages});
    w.job(job.raw);
    RunBatch all = repeat_iteration(it, iterations);
    for (const auto& e : all.events) w.on_event(e);
    for (const auto& m : all.memory) w.memory(m);
    w.finish(RunStatus::Finished);
  }
  QElapsedTimer base;
  base.start();
  std::size_t n = 0;
  {
    db::RunReader r(path);
    r.for_each_event([&](const Event&) { ++n; });
  }
  double baseline_s = base.nsecsElapsed() / 1e9;
  const char* what = "RunReader::for_each_event alone";
#else
  QElapsedTimer base;
  base.start();
  RunBatch raw = simulate_run(job, {.iterations = iterations});
  double baseline_s = base.nsecsElapsed() / 1e9;
  const char* what = "simulating the run alone";
#endif
  {
    RunModel m2;
    RunFeeder feeder(&m2);
    TimelineView v2;
    v2.resize(1600, 600);
    v2.show();
    v2.setRun(&m2);
    QElapsedTimer t;
    t.start();
    double first_paint_s = -1;
    QObject::connect(v2.plot(), &QCustomPlot::afterReplot, [&] {
      if (first_paint_s < 0 && m2.eventCount() > 0) first_paint_s = t.nsecsElapsed() / 1e9;
    });
#ifdef PW_STUDIO_HAVE_DB
    DbRunSource src(path);
#else
    SimulatedRunSource src(job, {.iterations = iterations});
#endif
    feeder.setSource(&src);
    src.start();
    while (!m2.finished()) {
      QApplication::processEvents(QEventLoop::AllEvents, 5);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    feeder.drain();
    v2.zoomToFit();
    v2.plot()->replot(QCustomPlot::rpImmediateRefresh);
    double open_s = t.nsecsElapsed() / 1e9;
    std::printf("  first paint with data %.3f s (target <= 1.5 s); whole run loaded and painted %.3f s, %zu events\n"
                "  baseline (%s) %.3f s: load/baseline %.2fx\n",
                first_paint_s, open_s, m2.eventCount(), what, baseline_s, open_s / std::max(baseline_s, 1e-9));
  }

  // 3. Live ingestion.
  std::printf("\n[3] live ingestion: feeder every 33 ms, timeline follows and replots on every change\n");
  double best_ok = 0;
  for (double rate : {100e3, 300e3, 1e6, 3e6}) {
    RunModel m3;
    RunFeeder feeder(&m3);
    TimelineView v3;
    v3.resize(1600, 600);
    v3.show();
    v3.setRun(&m3);
    RateSource src(it, rate);
    feeder.setSource(&src);
    LiveFigures f = measure_live(v3.plot(), m3, src, rate);
    if (f.ok) best_ok = std::max(best_ok, f.ingested);
    print_live(f, feeder.maxDrainMs());
  }
  std::printf("  sustained %.0f events/s with redraw interval <= 50 ms (target >= 100000): %.1fx the target\n", best_ok,
              best_ok / 100e3);
  {
    // The GUI thread's worst tick growing 8 stages x 3 rows of tracks by
    // 10k events a tick up to 2M events (quick: 100k): chunked columns
    // (EventTrack) vs the same columns in std::vectors.
    RunBatch all =
        repeat_iteration(it, static_cast<int>(bench::quick_or<std::size_t>(100'000, 2'000'000) / it.events.size()) + 1);
    auto worst_tick = [&](auto&& tracks, auto&& push) {
      double worst = 0;
      std::vector<std::vector<Event>> parts(24);
      for (std::size_t b = 0; b < all.events.size(); b += 10000) {
        for (auto& p : parts) p.clear();
        for (std::size_t k = b; k < std::min(all.events.size(), b + 10000); ++k)
          parts[all.events[k].stage % 8 * 3 + static_cast<int>(row_of(all.events[k].kind))].push_back(all.events[k]);
        QElapsedTimer e;
        e.start();
        for (int t = 0; t < 24; ++t) push(tracks[t], parts[t]);
        worst = std::max(worst, e.nsecsElapsed() / 1e6);
      }
      return worst;
    };
    std::vector<EventTrack> chunked(24);
    double w_chunked = worst_tick(chunked, [](EventTrack& t, const std::vector<Event>& v) { t.append(v); });
    struct VecTrack {
      std::vector<std::int64_t> start, end, bytes, max_end, dur;
      std::vector<std::int32_t> mb, l0, l1;
      std::vector<std::int16_t> chunk;
      std::vector<std::uint8_t> kind;
    };
    std::vector<VecTrack> vec(24);
    double w_vec = worst_tick(vec, [](VecTrack& t, const std::vector<Event>& v) {
      for (const auto& e : v) {
        t.start.push_back(e.start_ns);
        t.end.push_back(e.end_ns);
        t.bytes.push_back(e.bytes);
        t.mb.push_back(e.microbatch);
        t.l0.push_back(e.first_layer);
        t.l1.push_back(e.last_layer);
        t.chunk.push_back(e.chunk);
        t.kind.push_back(static_cast<std::uint8_t>(e.kind));
        t.max_end.push_back(std::max(t.max_end.empty() ? e.end_ns : t.max_end.back(), e.end_ns));
        t.dur.push_back((t.dur.empty() ? 0 : t.dur.back()) + e.end_ns - e.start_ns);
      }
    });
    std::printf("  worst tick appending 10k events to 24 tracks, up to %zu events: %.2f ms; baseline std::vector columns "
                "%.2f ms (%.1fx)\n",
                all.events.size(), w_chunked, w_vec, w_vec / std::max(w_chunked, 1e-6));
  }

  // 4. The same in the studio's whole window: every dock (memory,
  // throughput, plan, migrations, statistics, replay bar) follows the run.
  std::printf("\n[4] live ingestion in the main window (all docks shown), timeline's redraw interval\n");
  for (double rate : {100e3, 300e3, 1e6}) {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    auto* src = new RateSource(it, rate);
    w.setSource(src);  // owned by the window
    LiveFigures f = measure_live(w.timeline()->plot(), *w.run(), *src, rate);
    print_live(f, w.feeder()->maxDrainMs());
  }
  return 0;
}
