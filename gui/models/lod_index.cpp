#include "gui/models/lod_index.h"

#include <chrono>

namespace pw::gui {

LodIndex::LodIndex(QObject* parent) : QObject(parent), thread_([this] { work(); }) {}

LodIndex::~LodIndex() {
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LodIndex::add(std::vector<Event> events) {
  if (events.empty()) return;
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    queue_.push_back(std::move(events));
  }
  wake_.notify_one();
}

void LodIndex::clear() {
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    queue_.clear();
    ++generation_;  // a slice in progress finishes; the next one sees this and stops
  }
  std::lock_guard<std::mutex> g(mu_);
  lods_.clear();
}

void LodIndex::waitIdle() const {
  std::unique_lock<std::mutex> q(queue_mu_);
  idle_cv_.wait(q, [this] { return queue_.empty() && !busy_; });
}

bool LodIndex::idle() const {
  std::lock_guard<std::mutex> q(queue_mu_);
  return queue_.empty() && !busy_;
}

const TrackLod* LodIndex::lod(int stage, TrackRow row) const {
  if (stage < 0 || stage >= static_cast<int>(lods_.size())) return nullptr;
  return &lods_[stage][static_cast<int>(row)];
}

void LodIndex::work() {
  for (;;) {
    std::vector<Event> events;
    std::uint64_t gen = 0;
    {
      std::unique_lock<std::mutex> q(queue_mu_);
      wake_.wait(q, [this] { return quit_ || !queue_.empty(); });
      if (quit_) return;
      events = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      gen = generation_.load();
    }
    std::size_t i = 0;
    bool dropped = false;
    while (i < events.size() && !dropped) {
      while (readers_waiting_.load() > 0) std::this_thread::yield();
      std::lock_guard<std::mutex> g(mu_);
      if (generation_.load() != gen) {
        dropped = true;  // cleared meanwhile
        break;
      }
      // A slice ends after kSlice events or kMaxHold, whichever comes
      // first: a track growing or coarsening its buckets makes some events
      // far costlier than others, and the painter waits for the slice.
      const auto t0 = std::chrono::steady_clock::now();
      const std::size_t end = std::min(events.size(), i + kSlice);
      while (i < end) {
        const Event& e = events[i++];
        if (e.stage >= 0) {
          if (e.stage >= static_cast<int>(lods_.size())) lods_.resize(static_cast<std::size_t>(e.stage) + 1);
          lods_[e.stage][static_cast<int>(row_of(e.kind))].add(e.start_ns, std::max(e.start_ns, e.end_ns), e.kind);
        }
        if (i % 32 == 0 && std::chrono::steady_clock::now() - t0 > kMaxHold) break;
      }
    }
    // Announce before reporting idle, so whoever waits for idle has seen
    // the signal (a spurious extra one, if more work came in, only repaints).
    bool caught_up = false;
    {
      std::lock_guard<std::mutex> q(queue_mu_);
      caught_up = queue_.empty();
    }
    if (caught_up) emit updated();
    {
      std::lock_guard<std::mutex> q(queue_mu_);
      busy_ = false;
      caught_up = queue_.empty();
    }
    if (caught_up) idle_cv_.notify_all();
  }
}

}  // namespace pw::gui
