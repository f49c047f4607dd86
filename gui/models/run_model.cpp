#include "gui/models/run_model.h"
#include "core/events/bubble.h"
#include "core/events/event_kinds.h"

#include <algorithm>

namespace pw::gui {

RunModel::RunModel(QObject* parent) : QObject(parent) {}

void RunModel::clear() {
  info_ = RunInfo();
  tracks_.clear();
  memory_.clear();
  peak_memory_.clear();
  busy_ns_.clear();
  throughput_.clear();
  completions_.clear();
  plans_.clear();
  migrations_.clear();
  subnet_states_.clear();
  subnet_edges_.clear();
  lod_.clear();
  event_count_ = memory_count_ = 0;
  kinds_seen_ = 0;
  begin_ns_ = end_ns_ = 0;
  has_span_ = false;
  finished_ = false;
  paused_ = false;
  status_ = RunStatus::Running;
  status_reason_.clear();
  ++revision_;
  emit reset();
  emit changed();
}

void RunModel::ensureStages(int n) {
  if (n <= stageCount()) return;
  tracks_.resize(n);
  memory_.resize(n);
  peak_memory_.resize(n, 0);
  busy_ns_.resize(n, 0);
}

void RunModel::extend(std::int64_t t0, std::int64_t t1) {
  if (!has_span_) {
    begin_ns_ = t0;
    end_ns_ = t1;
    has_span_ = true;
  } else {
    begin_ns_ = std::min(begin_ns_, t0);
    end_ns_ = std::max(end_ns_, t1);
  }
}

void RunModel::append(const RunBatch& b) {
  if (!appendOne(b)) return;
  ++revision_;
  emit changed();
}

void RunModel::append(const std::vector<RunBatch>& batches) {
  bool any = false;
  for (const auto& b : batches) any = appendOne(b) || any;
  if (!any) return;
  ++revision_;
  emit changed();
}

bool RunModel::appendOne(const RunBatch& b) {
  if (b.size() == 0 && !b.info && !b.finished && !b.status && !b.paused) return false;
  if (b.paused) paused_ = *b.paused;
  if (b.status && status_ == RunStatus::Running) {
    status_ = *b.status;
    status_reason_ = b.status_reason;
  }
  if (b.info) {
    // Replicas heard from before the info came (a live run's telemetry,
    // whose info follows its status) stay counted: the selector lists them.
    const int heard = info_.recorded_replicas;
    info_ = *b.info;
    info_.recorded_replicas = std::max(info_.recorded_replicas, heard);
    info_.replicas = std::max(info_.replicas, info_.recorded_replicas);
    ensureStages(info_.stages);
  }
  // One pipeline: a source that publishes several replicas' events (a live
  // run's telemetry) has all but the shown one's dropped here; a recorded
  // run's source filters them on its worker already.
  const std::vector<Event>* events = &b.events;
  std::vector<Event> own;
  if (std::any_of(b.events.begin(), b.events.end(), [&](const Event& e) { return e.replica != info_.replica; })) {
    for (const auto& e : b.events) {
      info_.recorded_replicas = std::max(info_.recorded_replicas, e.replica + 1);
      if (e.replica == info_.replica) own.push_back(e);
    }
    info_.replicas = std::max(info_.replicas, info_.recorded_replicas);
    events = &own;
  }
  if (!events->empty()) {
    int max_stage = 0;
    for (const auto& e : *events) max_stage = std::max(max_stage, e.stage);
    ensureStages(max_stage + 1);
    // Split by (stage, row) once, then append each part: keeps the tracks'
    // re-sorting local to this batch.
    if (static_cast<int>(scratch_.size()) < stageCount()) scratch_.resize(stageCount());
    auto& parts = scratch_;
    const std::size_t old_completions = completions_.size();
    for (auto& st : parts)
      for (auto& v : st) v.clear();
    for (const auto& e : *events) {
      if (e.stage < 0) continue;
      parts[e.stage][static_cast<int>(row_of(e.kind))].push_back(e);
      static_assert(kEventKindCount <= 32, "kindsSeen() is a 32-bit mask");
      kinds_seen_ |= 1u << (static_cast<unsigned>(e.kind) & 31u);
      extend(e.start_ns, std::max(e.start_ns, e.end_ns));
      if (is_busy(e.kind) && e.end_ns > e.start_ns) busy_ns_[e.stage] += e.end_ns - e.start_ns;
      // A microbatch completes with its last backward: full, or W when split.
      if (completes_backward(e.kind) && e.stage == 0 && e.chunk == 0) completions_.push_back(e.end_ns);
    }
    for (int s = 0; s < stageCount(); ++s)
      for (int r = 0; r < kTrackRowCount; ++r) tracks_[s][r].append(parts[s][r]);
    lod_.add(*events);
    // Only this batch's completions can be out of order (O(batch), not O(run)).
    const auto fresh = completions_.begin() + static_cast<std::ptrdiff_t>(old_completions ? old_completions - 1 : 0);
    if (!std::is_sorted(fresh, completions_.end())) {
      std::sort(completions_.begin() + static_cast<std::ptrdiff_t>(old_completions), completions_.end());
      std::inplace_merge(completions_.begin(), completions_.begin() + static_cast<std::ptrdiff_t>(old_completions),
                         completions_.end());
    }
    event_count_ += events->size();
  }
  for (const auto& m : b.memory) {
    if (m.stage < 0) continue;
    // One pipeline's memory, as its events: the shown replica's samples.
    if (m.replica != info_.replica) {
      info_.recorded_replicas = std::max(info_.recorded_replicas, m.replica + 1);
      info_.replicas = std::max(info_.replicas, info_.recorded_replicas);
      continue;
    }
    ensureStages(m.stage + 1);
    auto& v = memory_[m.stage];
    if (v.empty() || v.back().t_ns <= m.t_ns) {
      v.push_back(m);
    } else {
      v.insert(std::upper_bound(v.begin(), v.end(), m.t_ns, [](std::int64_t t, const MemorySample& s) { return t < s.t_ns; }), m);
    }
    peak_memory_[m.stage] = std::max(peak_memory_[m.stage], m.bytes);
    extend(m.t_ns, m.t_ns);
    ++memory_count_;
  }
  throughput_.insert(throughput_.end(), b.throughput.begin(), b.throughput.end());
  for (const auto& p : b.plans) {
    // The same plan version can arrive twice (a live snapshot, then the message).
    if (std::any_of(plans_.begin(), plans_.end(), [&](const PlanVersion& v) { return v.version == p.version; })) continue;
    auto it = std::upper_bound(plans_.begin(), plans_.end(), p.t_ns,
                               [](std::int64_t t, const PlanVersion& v) { return t < v.t_ns; });
    plans_.insert(it, p);
  }
  migrations_.insert(migrations_.end(), b.migrations.begin(), b.migrations.end());
  subnet_states_.insert(subnet_states_.end(), b.subnet_states.begin(), b.subnet_states.end());
  subnet_edges_.insert(subnet_edges_.end(), b.subnet_edges.begin(), b.subnet_edges.end());
  for (const auto& m : b.migrations) extend(m.start_ns, m.end_ns);
  if (b.finished) finished_ = true;
  return true;
}

std::int64_t RunModel::memoryAt(int stage, std::int64_t t) const {
  if (stage < 0 || stage >= stageCount()) return 0;
  const auto& v = memory_[stage];
  auto it = std::upper_bound(v.begin(), v.end(), t, [](std::int64_t x, const MemorySample& s) { return x < s.t_ns; });
  return it == v.begin() ? 0 : std::prev(it)->bytes;
}

std::int64_t RunModel::memoryBudget(int stage) const {
  if (stage >= 0 && stage < static_cast<int>(info_.memory_budget.size())) return info_.memory_budget[stage];
  if (!plans_.empty() && stage >= 0 && stage < static_cast<int>(plans_.back().plan.predicted.size()))
    return static_cast<std::int64_t>(plans_.back().plan.predicted[stage].memory_budget_bytes);
  return 0;
}

std::vector<ThroughputSample> RunModel::throughput(int buckets) const {
  if (!throughput_.empty()) return throughput_;
  std::vector<ThroughputSample> out;
  if (completions_.size() < 2 || buckets < 1) return out;
  std::int64_t t0 = begin_ns_, t1 = completions_.back();
  if (t1 <= t0) return out;
  double width = static_cast<double>(t1 - t0) / buckets;
  // Windows shorter than an iteration make the curve saw-tooth with the
  // schedule's fill and drain.
  double per_window = std::max(4, info_.microbatches);
  double min_width = per_window * (t1 - t0) / static_cast<double>(completions_.size());
  if (width < min_width) {
    buckets = std::max(1, static_cast<int>((t1 - t0) / min_width));
    width = static_cast<double>(t1 - t0) / buckets;
  }
  std::size_t i = 0;
  for (int b = 0; b < buckets; ++b) {
    double hi = t0 + (b + 1) * width;
    std::size_t n = 0;
    while (i < completions_.size() && (completions_[i] <= hi || b == buckets - 1)) {
      ++i;
      ++n;
    }
    double samples = static_cast<double>(n) * std::max(1, info_.microbatch_size);
    ThroughputSample t;
    t.t_ns = static_cast<std::int64_t>(t0 + (b + 0.5) * width);
    t.samples_per_s = samples / (width / 1e9);
    out.push_back(t);
  }
  return out;
}

double RunModel::bubbleFraction() const {
  std::int64_t busy = 0;
  for (auto b : busy_ns_) busy += b;
  return bubble_fraction(static_cast<double>(busy), stageCount(), static_cast<double>(end_ns_ - begin_ns_));
}

const PlanVersion* RunModel::planAt(std::int64_t t) const {
  auto it = std::upper_bound(plans_.begin(), plans_.end(), t, [](std::int64_t x, const PlanVersion& v) { return x < v.t_ns; });
  return it == plans_.begin() ? nullptr : &*std::prev(it);
}

}  // namespace pw::gui
