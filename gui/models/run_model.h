#pragma once
#include <QObject>
#include <array>
#include <cstdint>
#include <vector>

#include "gui/models/event_track.h"
#include "gui/models/lod_index.h"
#include "gui/models/run_batch.h"

namespace pw::gui {

// Everything the studio knows about one run, live or recorded: the one
// data model every view reads. Sources append batches on the GUI thread
// (RunFeeder drains them from the worker); views read the columns
// directly and repaint on `changed`, which fires at most once per append.
class RunModel : public QObject {
  Q_OBJECT
 public:
  explicit RunModel(QObject* parent = nullptr);

  void append(const RunBatch& batch);
  // Several batches, one `changed` signal.
  void append(const std::vector<RunBatch>& batches);
  void clear();

  const RunInfo& info() const { return info_; }
  int stageCount() const { return static_cast<int>(tracks_.size()); }
  const EventTrack& track(int stage, TrackRow row) const { return tracks_[stage][static_cast<int>(row)]; }
  // The tracks' level-of-detail buckets (zoomed-out drawing), built off the
  // GUI thread; they may trail the tracks by a tick (lod().updated() says
  // when they caught up).
  const LodIndex& lod() const { return lod_; }
  void waitForLod() const { lod_.waitIdle(); }
  std::size_t eventCount() const { return event_count_; }
  // Bit k set: the run holds events of EventKind k (the timeline's legend).
  std::uint32_t kindsSeen() const { return kinds_seen_; }

  // Time span covered by anything recorded, [begin, end] in ns.
  std::int64_t beginNs() const { return begin_ns_; }
  std::int64_t endNs() const { return end_ns_; }
  bool isEmpty() const { return event_count_ == 0 && memory_count_ == 0; }
  bool finished() const { return finished_; }
  // Running until a producer reports otherwise; a terminal state (finished,
  // failed, stopped) is kept: a late "running" cannot revive a dead run.
  RunStatus status() const { return status_; }
  const std::string& statusReason() const { return status_reason_; }
  // A live run its engine reports paused (every stage holding).
  bool paused() const { return paused_ && status_ == RunStatus::Running; }

  // Memory of a stage over time (sorted by t).
  const std::vector<MemorySample>& memory(int stage) const { return memory_[stage]; }
  // Resident bytes of a stage at time t (the last sample at or before t).
  std::int64_t memoryAt(int stage, std::int64_t t) const;
  std::int64_t memoryBudget(int stage) const;
  std::int64_t peakMemory(int stage) const { return peak_memory_[stage]; }
  // Busy (compute) time of a stage over the whole run, kept as events
  // arrive: the whole-run figures cost O(stages), not a scan of the run.
  std::int64_t busyNs(int stage) const { return busy_ns_[stage]; }
  // 1 - busy / (span x stages) over the whole run (0 when empty): what
  // range_stats(run, beginNs(), endNs()).bubble_fraction computes by scanning.
  double bubbleFraction() const;

  // Throughput as reported by the source, or, when the source reports none,
  // derived from microbatches leaving the pipeline (backward of virtual
  // stage 0), averaged over `buckets` equal windows of the run.
  std::vector<ThroughputSample> throughput(int buckets = 200) const;
  // Microbatch completions (end of the first stage's backward), sorted.
  const std::vector<std::int64_t>& completions() const { return completions_; }

  const std::vector<PlanVersion>& plans() const { return plans_; }
  // The plan in force at t (nullptr before the first).
  const PlanVersion* planAt(std::int64_t t) const;
  const std::vector<Migration>& migrations() const { return migrations_; }
  const std::vector<SubnetState>& subnetStates() const { return subnet_states_; }
  const std::vector<SubnetEdge>& subnetEdges() const { return subnet_edges_; }

  // Bumped on every change so views can skip repaints of unchanged data.
  quint64 revision() const { return revision_; }

 signals:
  void changed();
  void reset();  // cleared or a new run began

 private:
  void ensureStages(int n);
  bool appendOne(const RunBatch& batch);  // false when the batch was empty
  void extend(std::int64_t t0, std::int64_t t1);

  // Per (stage, row) split of a batch, kept between appends so its memory
  // is not faulted in afresh every tick.
  std::vector<std::array<std::vector<Event>, kTrackRowCount>> scratch_;
  RunInfo info_;
  std::vector<std::array<EventTrack, kTrackRowCount>> tracks_;
  std::vector<std::vector<MemorySample>> memory_;
  std::vector<std::int64_t> peak_memory_;
  std::vector<std::int64_t> busy_ns_;
  std::vector<ThroughputSample> throughput_;
  std::vector<std::int64_t> completions_;
  std::vector<PlanVersion> plans_;
  std::vector<Migration> migrations_;
  std::vector<SubnetState> subnet_states_;
  std::vector<SubnetEdge> subnet_edges_;
  std::size_t event_count_ = 0, memory_count_ = 0;
  std::uint32_t kinds_seen_ = 0;
  std::int64_t begin_ns_ = 0, end_ns_ = 0;
  bool has_span_ = false;
  bool finished_ = false;
  bool paused_ = false;
  RunStatus status_ = RunStatus::Running;
  std::string status_reason_;
  quint64 revision_ = 0;
  LodIndex lod_;
};

}  // namespace pw::gui
