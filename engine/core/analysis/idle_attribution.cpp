#include "core/analysis/idle_attribution.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/events/event_kinds.h"

namespace pw {
namespace {

constexpr const char* kCauseNames[kIdleCauseCount] = {"fill",          "drain",     "dependency", "transfer",
                                                      "recompute",     "swap_stall", "optimizer", "host_overhead",
                                                      "imbalance",     "migration",  "gradient_sync",
                                                      "tensor_sync"};

// What occupies a stage, by priority: nested policy work is taken out of the
// compute around it (the engine's swaps and recomputes run inside its
// forward and backward events).
// A tensor all-reduce the engine records inside its forward or backward
// is taken out of it like nested policy work.
enum Label : int { kGap = 0, kCompute, kOptimizer, kMigrate, kRecompute, kSwap, kTensor, kLabelCount };

IdleCause label_cause(int label) {
  switch (label) {
    case kOptimizer: return IdleCause::Optimizer;
    case kMigrate: return IdleCause::Migration;
    case kRecompute: return IdleCause::Recompute;
    case kTensor: return IdleCause::TensorSync;
    default: return IdleCause::SwapStall;
  }
}

// Events found by a key (microbatch and layer, with the stage for sends)
// and time: the producers of an input and their sends. Layers and stages
// below 65536 (the simulator's limit is far lower).
std::uint64_t key_of(std::int64_t mb, std::int64_t layer, std::int64_t stage = 0) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(mb)) << 32) |
         (static_cast<std::uint64_t>(stage & 0xFFFF) << 16) | static_cast<std::uint64_t>(layer & 0xFFFF);
}

struct Ref {
  std::uint64_t key;
  std::int64_t t;
  std::uint32_t idx;
};
bool operator<(const Ref& x, const Ref& y) { return x.key != y.key ? x.key < y.key : x.t < y.t; }

class RefIndex {
 public:
  void add(std::uint64_t key, std::int64_t t, std::size_t idx) { v_.push_back({key, t, static_cast<std::uint32_t>(idx)}); }
  void sort() { std::sort(v_.begin(), v_.end()); }
  // The entry with the key and the greatest t <= limit; -1 if none.
  long last_at_or_before(std::uint64_t key, std::int64_t limit) const {
    auto it = std::upper_bound(v_.begin(), v_.end(), Ref{key, limit, 0},
                               [](const Ref& x, const Ref& y) { return x.key != y.key ? x.key < y.key : x.t < y.t; });
    if (it == v_.begin()) return -1;
    --it;
    return it->key == key ? static_cast<long>(it->idx) : -1;
  }
  // The entry with the key and the least t >= from; -1 if none.
  long first_at_or_after(std::uint64_t key, std::int64_t from) const {
    auto it = std::lower_bound(v_.begin(), v_.end(), Ref{key, from, 0});
    return it != v_.end() && it->key == key ? static_cast<long>(it->idx) : -1;
  }

 private:
  std::vector<Ref> v_;
};

struct Window {
  std::int64_t start = 0, end = 0;
  std::size_t first = 0, last = 0;  // the stage's events with start in [start, end): sorted positions
};

class Attributor {
 public:
  Attributor(std::vector<Event> events, const AttributionOptions& opt) : ev_(std::move(events)), opt_(opt) {
    sort_events();
  }

  // By stage, then start; parents before the children nested in them (same
  // start, longer first). Recorded runs are nearly in time order per stage:
  // a counting pass by stage, then a sort only where a stage is out of order.
  void sort_events() {
    int stages = 0;
    for (const auto& e : ev_) stages = std::max(stages, e.stage + 1);
    std::vector<std::size_t> at(stages + 1, 0);
    for (const auto& e : ev_) ++at[std::max(e.stage, 0) + 1];
    for (int s = 0; s < stages; ++s) at[s + 1] += at[s];
    std::vector<Event> by_stage(ev_.size());
    std::vector<std::size_t> pos(at.begin(), at.end() - 1);
    for (const auto& e : ev_) by_stage[pos[std::max(e.stage, 0)]++] = e;
    ev_.swap(by_stage);
    auto order = [](const Event& a, const Event& b) { return std::tie(a.stage, a.start_ns, b.end_ns) < std::tie(b.stage, b.start_ns, a.end_ns); };
    for (int s = 0; s < stages; ++s) {
      auto first = ev_.begin() + static_cast<std::ptrdiff_t>(at[s]), last = ev_.begin() + static_cast<std::ptrdiff_t>(at[s + 1]);
      if (!std::is_sorted(first, last, order)) std::sort(first, last, order);
    }
  }

  Attribution run() {
    Attribution out;
    if (ev_.empty()) return out;
    index();
    windows();
    out.stages = stages_;
    out.iterations = iterations_;
    if (opt_.keep_intervals) out.intervals.reserve(ev_.size() / (opt_.iteration >= 0 ? std::max(iterations_, 1) : 1));
    // Stage by stage, so the intervals come out by stage and time.
    for (int s = 0; s < stages_; ++s)
      for (int i = 0; i < iterations_ && !win_[s].empty(); ++i)
        if (opt_.iteration < 0 || i == opt_.iteration) out.stage_iterations.push_back(attribute(s, i, out));
    std::stable_sort(out.stage_iterations.begin(), out.stage_iterations.end(),
                     [](const StageIteration& a, const StageIteration& b) { return a.iteration < b.iteration; });
    return out;
  }

 private:
  void index() {
    stages_ = ev_.back().stage + 1;
    begin_.assign(stages_ + 1, ev_.size());
    nested_.assign(ev_.size(), false);
    recvs_.resize(stages_);
    swapins_.resize(stages_);
    collectives_.resize(stages_);
    std::size_t cur_compute = SIZE_MAX;
    int cur_stage = -1;
    for (std::size_t i = 0; i < ev_.size(); ++i) {
      const Event& e = ev_[i];
      if (e.stage < 0) continue;
      if (e.stage != cur_stage) {
        for (int s = cur_stage + 1; s <= e.stage; ++s) begin_[s] = i;
        cur_stage = e.stage;
        cur_compute = SIZE_MAX;
      }
      if (is_compute(e.kind)) {
        if (cur_compute == SIZE_MAX || e.end_ns >= ev_[cur_compute].end_ns) cur_compute = i;
        // The producers a later gap may wait for: forwards (activations) and
        // the backwards that pass a gradient on (a full backward or B, not W).
        if (e.kind == EventKind::Forward) fwd_out_.add(key_of(e.microbatch, e.last_layer), e.end_ns, i);
        if (carries_gradient(e.kind)) bwd_in_.add(key_of(e.microbatch, e.first_layer), e.end_ns, i);
      } else if (is_memory_policy(e.kind)) {
        if (cur_compute != SIZE_MAX) {
          const Event& p = ev_[cur_compute];
          nested_[i] = runs_inside(e.kind, p.kind) && p.microbatch == e.microbatch && p.chunk == e.chunk &&
                       e.start_ns >= p.start_ns && e.end_ns <= p.end_ns;
        }
        if (e.kind == EventKind::SwapIn && !nested_[i]) swapins_[e.stage].push_back(i);
      } else if (e.kind == EventKind::Send) {
        sends_.add(key_of(e.microbatch, e.first_layer, e.stage), e.start_ns, i);
      } else if (e.kind == EventKind::Recv) {
        recvs_[e.stage].push_back(i);
      } else if (is_collective(e.kind)) {
        collectives_[e.stage].push_back(i);
      }
    }
    for (int s = cur_stage + 1; s <= stages_; ++s) begin_[s] = ev_.size();
    fwd_out_.sort();
    bwd_in_.sort();
    sends_.sort();
  }

  static int label_of(const Event& e, bool nested) {
    if (is_compute(e.kind)) return kCompute;
    if (is_tensor_collective(e.kind)) return kTensor;
    if (e.kind == EventKind::OptimizerStep) return kOptimizer;
    if (e.kind == EventKind::Migrate) return kMigrate;
    if (e.kind == EventKind::Recompute) return kRecompute;  // the simulator's runs before the backward, the engine's inside
    if (is_swap(e.kind)) return nested ? kSwap : kGap;      // asynchronous swaps overlap compute
    return kGap;
  }

  void windows() {
    const int k = std::max(1, opt_.optimizer_steps_per_iteration);
    std::vector<std::vector<std::int64_t>> bounds(stages_);
    std::int64_t run_start = std::numeric_limits<std::int64_t>::max();
    int complete = std::numeric_limits<int>::max();
    bool any_steps = false;
    for (int s = 0; s < stages_; ++s) {
      if (begin_[s] == begin_[s + 1]) continue;
      int steps = 0;
      for (std::size_t i = begin_[s]; i < begin_[s + 1]; ++i) {
        run_start = std::min(run_start, ev_[i].start_ns);
        if (ev_[i].kind == EventKind::OptimizerStep && ++steps % k == 0) bounds[s].push_back(ev_[i].end_ns);
      }
      if (!bounds[s].empty()) {
        any_steps = true;
        complete = std::min(complete, static_cast<int>(bounds[s].size()));
      }
    }
    iterations_ = any_steps ? complete : 1;
    win_.assign(stages_, {});
    std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
    for (int s = 0; s < stages_; ++s) {
      if (begin_[s] == begin_[s + 1]) continue;
      if (bounds[s].empty()) {  // a stage without steps is one iteration, whatever the others do
        std::int64_t e = run_start;
        for (std::size_t i = begin_[s]; i < begin_[s + 1]; ++i) e = std::max(e, ev_[i].end_ns);
        bounds[s].assign(iterations_, e);
      }
      std::int64_t t = run_start;
      std::size_t pos = begin_[s];
      for (int i = 0; i < iterations_; ++i) {
        Window w;
        w.start = t;
        w.end = bounds[s][i];
        while (pos < begin_[s + 1] && ev_[pos].start_ns < w.start) ++pos;
        w.first = pos;
        // An optimizer step of zero length ends where it starts: it belongs here.
        while (pos < begin_[s + 1] && (ev_[pos].start_ns < w.end || (ev_[pos].start_ns == w.end && ev_[pos].end_ns == w.end &&
                                                                       ev_[pos].kind == EventKind::OptimizerStep)))
          ++pos;
        w.last = pos;
        win_[s].push_back(w);
        t = w.end;
      }
      last_end = std::max(last_end, win_[s].back().end);
    }
    // The last iteration ends with the slowest stage: the others' tails are
    // their drain (or imbalance), unless they have already moved on.
    for (int s = 0; s < stages_; ++s) {
      if (win_[s].empty()) continue;
      Window& w = win_[s].back();
      std::int64_t next = win_[s].back().last < begin_[s + 1] ? ev_[w.last].start_ns : last_end;
      w.end = std::max(w.end, std::min(last_end, next));
    }
    // Each stage's last backward (of any form: with a split one, its last W)
    // in the last iteration, for the drain at its end.
    last_bwd_.assign(stages_, std::numeric_limits<std::int64_t>::min());
    for (int s = 0; s < stages_; ++s) {
      if (win_[s].empty()) continue;
      const Window& w = win_[s].back();
      for (std::size_t i = w.first; i < w.last; ++i)
        if (is_backward(ev_[i].kind)) last_bwd_[s] = std::max(last_bwd_[s], ev_[i].end_ns);
    }
    max_last_bwd_ = *std::max_element(last_bwd_.begin(), last_bwd_.end());
  }

  struct Phase {  // where an action sits in its stage's iteration
    std::int64_t first_fwd = -1, first_bwd = -1, last_fwd = -1;
  };

  void add(StageIteration& it, Attribution& out, IdleCause c, std::int64_t a, std::int64_t b, int peer = -1,
           bool gradient = false, int mb = -1) {
    if (b <= a) return;
    it.cause_ns[static_cast<int>(c)] += b - a;
    if (c == IdleCause::Dependency && peer >= 0) {
      auto& v = gradient ? it.gradient_wait_ns : it.activation_wait_ns;
      if (static_cast<int>(v.size()) <= peer) v.resize(peer + 1, 0);
      v[peer] += b - a;
    }
    if (!opt_.keep_intervals) return;
    IdleInterval x;
    x.start_ns = a;
    x.end_ns = b;
    x.stage = it.stage;
    x.iteration = it.iteration;
    x.cause = c;
    x.peer = peer;
    x.gradient = gradient;
    x.microbatch = mb;
    // Adjacent pieces of one wait stay one interval.
    if (!out.intervals.empty()) {
      IdleInterval& p = out.intervals.back();
      if (p.stage == x.stage && p.end_ns == a && p.cause == c && p.peer == peer && p.gradient == gradient &&
          p.microbatch == mb) {
        p.end_ns = b;
        return;
      }
    }
    out.intervals.push_back(x);
  }

  // The gap [g0, g1) ends where event `next` (sorted position) starts.
  void classify_gap(StageIteration& it, Attribution& out, const Phase& ph, std::int64_t g0, std::int64_t g1, std::size_t next,
                    std::size_t stage_end) {
    const int s = it.stage;
    const Event* a = &ev_[next];
    if (a->kind == EventKind::OptimizerStep) {
      // The step waits first for the last gradient bucket to be all-reduced
      // (if it was still going when the compute ended), then the rest is the
      // step's own (outstanding sends, host work after the buckets).
      const std::int64_t synced = std::clamp(last_collective_end(s, g1), g0, g1);
      add(it, out, IdleCause::GradientSync, g0, synced);
      return add(it, out, IdleCause::Optimizer, synced, g1);
    }
    if (a->kind == EventKind::Recompute) {
      // The simulator recomputes right before the backward that needs it: the wait is that backward's.
      for (std::size_t j = next + 1; j < stage_end && j < next + 8; ++j)
        if (carries_gradient(ev_[j].kind) && ev_[j].microbatch == a->microbatch && ev_[j].chunk == a->chunk) {
          a = &ev_[j];
          break;
        }
    }
    if (!is_compute(a->kind)) return add(it, out, IdleCause::HostOverhead, g0, g1);
    // A forward waits for its activation, a gradient-carrying backward for
    // its gradient; W waits for no peer (its input is its own stage's B), so
    // a gap before it is the host's.
    const bool gradient = carries_gradient(a->kind);
    const bool waits_for_peer = gradient || a->kind == EventKind::Forward;
    long producer = -1;
    if (waits_for_peer && a->first_layer >= 0) {
      producer = gradient ? bwd_in_.last_at_or_before(key_of(a->microbatch, a->last_layer + 1), g1)
                          : fwd_out_.last_at_or_before(key_of(a->microbatch, a->first_layer - 1), g1);
    }
    std::int64_t host_before = g0, ready = g0, peer_done = g0;
    int peer = -1;
    if (producer >= 0) {
      const Event& p = ev_[producer];
      peer = p.stage;
      peer_done = std::clamp(p.end_ns, g0, g1);
      // The engine's receive: blocked from its start to the data's arrival.
      long recv = last_recv(s, a->microbatch, g0, g1);
      if (recv >= 0) {
        host_before = std::clamp(ev_[recv].start_ns, g0, g1);
        ready = std::clamp(ev_[recv].end_ns, host_before, g1);
      } else {
        long send = sends_.first_at_or_after(key_of(p.microbatch, p.first_layer, p.stage), p.end_ns);
        std::int64_t arrive = send >= 0 ? std::max(p.end_ns, ev_[send].end_ns) : p.end_ns;
        ready = std::clamp(arrive, g0, g1);
      }
      peer_done = std::clamp(peer_done, host_before, ready);
    }
    add(it, out, IdleCause::HostOverhead, g0, host_before);
    if (peer >= 0) {
      IdleCause c = IdleCause::Dependency;
      if (a->kind == EventKind::Forward && a->start_ns == ph.first_fwd) c = IdleCause::Fill;
      else if (gradient && a->start_ns == ph.first_bwd) c = IdleCause::Fill;
      else if (gradient && a->start_ns > ph.last_fwd) c = IdleCause::Drain;
      add(it, out, c, host_before, peer_done, peer, gradient, a->microbatch);
      add(it, out, IdleCause::Transfer, peer_done, ready, peer, gradient, a->microbatch);
    }
    std::int64_t swap_end = ready;
    // A W waits for its swapped layers' stash as a backward for its
    // activations (issue 43's stash offload).
    if (gradient || a->kind == EventKind::BackwardWeight) {
      long sw = last_swapin(s, a->microbatch, a->chunk, g1);
      if (sw >= 0 && ev_[sw].end_ns > ready) swap_end = std::min(ev_[sw].end_ns, g1);
    }
    add(it, out, IdleCause::SwapStall, ready, swap_end, -1, false, a->microbatch);
    add(it, out, IdleCause::HostOverhead, swap_end, g1);
  }

  long last_recv(int s, int mb, std::int64_t g0, std::int64_t g1) const {
    const auto& v = recvs_[s];
    auto it = std::lower_bound(v.begin(), v.end(), g1, [&](std::size_t i, std::int64_t t) { return ev_[i].start_ns < t; });
    while (it != v.begin()) {
      --it;
      const Event& r = ev_[*it];
      if (r.end_ns <= g0) break;
      if (r.microbatch == mb) return static_cast<long>(*it);
    }
    return -1;
  }

  // The latest end among the stage's collectives that started before t:
  // the step waits for every bucket, and the collective stream may finish
  // them out of start order only where several start at one instant.
  std::int64_t last_collective_end(int s, std::int64_t t) const {
    const auto& v = collectives_[s];
    auto it = std::lower_bound(v.begin(), v.end(), t, [&](std::size_t i, std::int64_t u) { return ev_[i].start_ns < u; });
    std::int64_t end = std::numeric_limits<std::int64_t>::min();
    while (it != v.begin()) {
      --it;
      end = std::max(end, ev_[*it].end_ns);
      if (it == v.begin() || ev_[*std::prev(it)].start_ns != ev_[*it].start_ns) break;
    }
    return end;
  }

  long last_swapin(int s, int mb, int chunk, std::int64_t g1) const {
    const auto& v = swapins_[s];
    auto it = std::lower_bound(v.begin(), v.end(), g1, [&](std::size_t i, std::int64_t t) { return ev_[i].start_ns < t; });
    for (int n = 0; it != v.begin() && n < 4; ++n) {
      --it;
      if (ev_[*it].microbatch == mb && ev_[*it].chunk == chunk) return static_cast<long>(*it);
    }
    return -1;
  }

  StageIteration attribute(int s, int i, Attribution& out) {
    const Window& w = win_[s][i];
    StageIteration it;
    it.stage = s;
    it.iteration = i;
    it.start_ns = w.start;
    it.end_ns = w.end;
    Phase ph;
    auto& pts = pts_;
    auto& labelled = labelled_;  // sorted positions of the events that occupy the stage
    pts.clear();
    labelled.clear();
    for (std::size_t j = w.first; j < w.last; ++j) {
      const Event& e = ev_[j];
      int l = label_of(e, nested_[j]);
      if (l == kGap) continue;
      std::int64_t a = std::max(e.start_ns, w.start), b = std::min(e.end_ns, w.end);
      if (e.kind == EventKind::Forward) {
        if (ph.first_fwd < 0) ph.first_fwd = e.start_ns;
        ph.last_fwd = e.start_ns;
      }
      if (carries_gradient(e.kind) && ph.first_bwd < 0) ph.first_bwd = e.start_ns;
      labelled.push_back(j);
      if (b <= a) continue;
      pts.push_back({a, +1, l});
      pts.push_back({b, -1, l});
    }
    std::sort(pts.begin(), pts.end(), [](const Point& x, const Point& y) { return x.t < y.t; });
    int count[kLabelCount] = {};
    std::int64_t cur = w.start;
    std::size_t next = 0;  // in `labelled`
    auto top = [&] {
      for (int l = kLabelCount - 1; l > kGap; --l)
        if (count[l] > 0) return l;
      return static_cast<int>(kGap);
    };
    auto busy = [&](int l, std::int64_t a, std::int64_t b) {
      if (b <= a) return;
      if (l == kCompute) it.compute_ns += b - a;
      else add(it, out, label_cause(l), a, b);
    };
    std::size_t p = 0;
    while (p < pts.size()) {
      std::int64_t t = pts[p].t;
      int l = top();
      if (t > cur) {
        if (l == kGap) {
          while (next < labelled.size() && ev_[labelled[next]].start_ns < t) ++next;
          if (next < labelled.size()) classify_gap(it, out, ph, cur, t, labelled[next], w.last);
          else add(it, out, IdleCause::HostOverhead, cur, t);
        } else {
          busy(l, cur, t);
        }
        cur = t;
      }
      for (; p < pts.size() && pts[p].t == t; ++p) count[pts[p].label] += pts[p].delta;
    }
    while (next < labelled.size() && ev_[labelled[next]].start_ns < cur) ++next;
    // An empty step after a wait ends that wait; what follows the stage's
    // last action (an empty step at its end included) is its tail.
    if (cur < w.end && next < labelled.size() && ev_[labelled[next]].start_ns > cur) {
      const std::int64_t t = std::min(ev_[labelled[next]].start_ns, w.end);
      classify_gap(it, out, ph, cur, t, labelled[next], w.last);
      cur = t;
    }
    if (cur < w.end) tail(it, out, cur, w.end, i == iterations_ - 1);
    return it;
  }

  // After the stage's last action: its drain while other stages still run
  // backwards, then imbalance.
  void tail(StageIteration& it, Attribution& out, std::int64_t a, std::int64_t b, bool last_iteration) {
    std::int64_t drain = 0;
    if (last_iteration && last_bwd_[it.stage] != std::numeric_limits<std::int64_t>::min())
      drain = std::max<std::int64_t>(0, max_last_bwd_ - last_bwd_[it.stage]);
    std::int64_t m = std::min(b, a + drain);
    add(it, out, IdleCause::Drain, a, m);
    add(it, out, IdleCause::Imbalance, m, b);
  }

  struct Point {
    std::int64_t t;
    int delta, label;
  };
  std::vector<Point> pts_;
  std::vector<std::size_t> labelled_;
  std::vector<Event> ev_;
  AttributionOptions opt_;
  int stages_ = 0, iterations_ = 0;
  std::vector<std::size_t> begin_;
  std::vector<bool> nested_;
  std::vector<std::vector<std::size_t>> recvs_, swapins_, collectives_;
  RefIndex fwd_out_, bwd_in_, sends_;
  std::vector<std::vector<Window>> win_;
  std::vector<std::int64_t> last_bwd_;
  std::int64_t max_last_bwd_ = 0;
};

}  // namespace

const char* to_string(IdleCause c) {
  auto i = static_cast<int>(c);
  return i >= 0 && i < kIdleCauseCount ? kCauseNames[i] : "?";
}

std::string dependency_name(int peer, bool gradient) {
  return std::string(gradient ? "wait_gradient_from_stage_" : "wait_activation_from_stage_") + std::to_string(peer);
}

std::string cause_name(const IdleInterval& i) {
  return i.cause == IdleCause::Dependency && i.peer >= 0 ? dependency_name(i.peer, i.gradient) : to_string(i.cause);
}

Attribution attribute_idle(std::vector<Event> events, const AttributionOptions& opt) {
  return Attributor(std::move(events), opt).run();
}

}  // namespace pw
