#include "gui/models/run_feeder.h"

#include "gui/models/run_model.h"
#include "gui/models/run_source.h"

namespace pw::gui {

RunFeeder::RunFeeder(RunModel* model, QObject* parent) : QObject(parent), model_(model) {
  timer_.setInterval(33);  // ~30 fps: the views repaint at most this often
  connect(&timer_, &QTimer::timeout, this, [this] { drain(); });
}

void RunFeeder::setSource(RunSource* source) {
  source_ = source;
  rate_ = 0;
  window_events_ = 0;
  window_.start();
  if (source) {
    timer_.start();
    // Catch the tail of a run that ends between two ticks.
    connect(source, &RunSource::finished, this, [this] { drain(); }, Qt::QueuedConnection);
  } else {
    timer_.stop();
  }
}

int RunFeeder::drain() {
  if (!source_) return 0;
  QElapsedTimer t;
  t.start();
  auto batches = source_->take();
  if (batches.empty()) return 0;
  int events = 0;
  if (batches.size() == 1) {
    events = static_cast<int>(batches[0].events.size());
    model_->append(batches[0]);
  } else {
  // One combined append: the model signals `changed` once per tick.
  RunBatch all;
  for (auto& b : batches) {
    if (b.info) all.info = b.info;
    all.events.insert(all.events.end(), b.events.begin(), b.events.end());
    all.memory.insert(all.memory.end(), b.memory.begin(), b.memory.end());
    all.throughput.insert(all.throughput.end(), b.throughput.begin(), b.throughput.end());
    all.plans.insert(all.plans.end(), b.plans.begin(), b.plans.end());
    all.migrations.insert(all.migrations.end(), b.migrations.begin(), b.migrations.end());
    all.subnet_states.insert(all.subnet_states.end(), b.subnet_states.begin(), b.subnet_states.end());
    all.subnet_edges.insert(all.subnet_edges.end(), b.subnet_edges.begin(), b.subnet_edges.end());
    all.finished = all.finished || b.finished;
    events += static_cast<int>(b.events.size());
  }
  model_->append(all);
  }
  window_events_ += events;
  if (window_.elapsed() >= 1000) {
    rate_ = window_events_ * 1000.0 / static_cast<double>(window_.elapsed());
    window_events_ = 0;
    window_.restart();
  }
  max_drain_ms_ = std::max(max_drain_ms_, t.nsecsElapsed() / 1e6);
  emit ingested(events);
  return events;
}

}  // namespace pw::gui
