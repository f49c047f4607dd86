#pragma once
#include <QObject>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/events/event.h"
#include "gui/models/event_track.h"
#include "gui/models/track_lod.h"

namespace pw::gui {

// The level-of-detail buckets of every (stage, row) of a run, built on a
// worker thread: the GUI thread only hands over each appended batch's
// events (one vector copy) and does no per-event bucket work. The painter
// reads under lock(); the worker adds in slices of at most kSlice events
// and kMaxHold per hold of that lock, so neither waits on the other for long.
class LodIndex : public QObject {
  Q_OBJECT
 public:
  static constexpr std::size_t kSlice = 2048;
  static constexpr std::chrono::microseconds kMaxHold{1000};

  explicit LodIndex(QObject* parent = nullptr);
  ~LodIndex() override;

  void add(std::vector<Event> events);
  // Drops everything, including events handed over but not yet added.
  void clear();
  // Blocks until every event handed over so far is in the buckets.
  void waitIdle() const;
  bool idle() const;

  // Read access: hold the lock while using lod()'s result.
  std::unique_lock<std::mutex> lock() const {
    ++readers_waiting_;
    std::unique_lock<std::mutex> l(mu_);
    --readers_waiting_;
    return l;
  }
  const TrackLod* lod(int stage, TrackRow row) const;

 signals:
  // The worker added everything it had (emitted from the worker thread:
  // receivers on the GUI thread get it queued).
  void updated();

 private:
  void work();

  mutable std::mutex mu_;  // lods_
  // A reader waiting for mu_: the worker lets it in between slices (a
  // std::mutex is not fair: the worker would take it straight back).
  mutable std::atomic<int> readers_waiting_{0};
  std::vector<std::array<TrackLod, kTrackRowCount>> lods_;

  mutable std::mutex queue_mu_;  // queue_, busy_, quit_
  mutable std::condition_variable wake_, idle_cv_;
  std::deque<std::vector<Event>> queue_;
  bool busy_ = false, quit_ = false;
  std::atomic<std::uint64_t> generation_{0};  // bumped by clear(): older work is dropped
  std::thread thread_;
};

}  // namespace pw::gui
