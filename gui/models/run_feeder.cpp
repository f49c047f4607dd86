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
  for (const auto& b : batches) events += static_cast<int>(b.events.size());
  model_->append(batches);  // one `changed` per tick
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
