#include "gui/models/simulated_run_source.h"

#include <chrono>
#include <thread>

#include "gui/models/simulated_iteration.h"

namespace pw::gui {

SimulatedRunSource::SimulatedRunSource(JobSpec job, SimulatedRunOptions options, QObject* parent)
    : RunSource(parent), job_(std::move(job)), opt_(options) {}

SimulatedRunSource::~SimulatedRunSource() { stop(); }

QString SimulatedRunSource::description() const {
  return QStringLiteral("simulated: %1").arg(QString::fromStdString(job_.name));
}

void SimulatedRunSource::run() {
  SimulatedIteration it = simulate_iteration(prepare_job(job_, opt_.planner));
  if (opt_.speed <= 0) {
    // Nothing to pace: hand over the run in large batches.
    RunBatch all = repeat_iteration(it, opt_.iterations);
    RunBatch head;
    head.info = all.info;
    head.plans = all.plans;
    head.memory = std::move(all.memory);
    publish(std::move(head));
    for (std::size_t i = 0; i < all.events.size() && !stopRequested(); i += opt_.batch_events) {
      RunBatch b;
      auto last = std::min(all.events.size(), i + opt_.batch_events);
      b.events.assign(all.events.begin() + static_cast<std::ptrdiff_t>(i), all.events.begin() + static_cast<std::ptrdiff_t>(last));
      b.finished = last == all.events.size();
      publish(std::move(b));
    }
    return;
  }

  RunBatch head;
  head.info = it.info;
  head.plans.push_back(it.plan);
  publish(std::move(head));
  using clock = std::chrono::steady_clock;
  auto wall0 = clock::now();
  RunBatch batch;
  auto flush = [&] {
    if (batch.size() == 0) return;
    publish(std::move(batch));
    batch = RunBatch();
  };
  for (int k = 0; k < opt_.iterations; ++k) {
    std::int64_t off = k * it.period;
    std::size_t mem_i = 0;
    for (const Event& src : it.events) {
      // Publish an event once the (scaled) wall clock has reached it.
      for (;;) {
        if (stopRequested()) return;
        double now_ns = std::chrono::duration<double, std::nano>(clock::now() - wall0).count() * opt_.speed;
        if (now_ns >= static_cast<double>(src.start_ns + off)) break;
        flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      for (; mem_i < it.memory.size() && it.memory[mem_i].t_ns <= src.start_ns; ++mem_i) {
        MemorySample m = it.memory[mem_i];
        m.t_ns += off;
        batch.memory.push_back(m);
      }
      Event e = src;
      e.start_ns += off;
      e.end_ns += off;
      batch.events.push_back(e);
      if (batch.events.size() >= opt_.batch_events) flush();
    }
    for (; mem_i < it.memory.size(); ++mem_i) {
      MemorySample m = it.memory[mem_i];
      m.t_ns += off;
      batch.memory.push_back(m);
    }
  }
  batch.finished = true;
  publish(std::move(batch));
}

}  // namespace pw::gui

namespace pw::gui {
RunBatch simulate_run(const JobSpec& job, const SimulatedRunOptions& options) {
  return repeat_iteration(simulate_iteration(prepare_job(job, options.planner)), options.iterations);
}
}  // namespace pw::gui
