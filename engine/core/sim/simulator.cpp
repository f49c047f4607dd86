#include "core/sim/simulator.h"

#include "core/events/bubble.h"
#include "core/events/event_kinds.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <sstream>
#include <stdexcept>

#include "core/cost/stage_cost.h"

namespace pw {
namespace {

std::int64_t to_ns(double ms) { return std::llround(ms * 1e6); }
constexpr std::int64_t kUnset = -1;

struct VStage {  // one virtual stage's per-microbatch costs in ns
  std::int64_t fwd, bwd, recompute, optimizer;
  std::int64_t bwd_input, bwd_weight;  // B and W of a split backward (bwd = B + W)
  // The tensor group's all-reduces at the end of the forward, B (or the
  // full backward) and recompute, part of fwd, bwd_input and recompute.
  std::int64_t tp_fwd, tp_bwd, tp_recompute;
  std::int64_t tp_fwd_bytes, tp_bwd_bytes, tp_recompute_bytes;
  std::int64_t w_stash;                // held on the device from B to W
  std::int64_t w_stash_swap;           // the swapped layers' stash: to the host after B, back before W
  std::int64_t stash_swap;             // its transfer, one direction over the host link
  int device;
  std::int64_t send_fwd;  // activation to the next virtual stage
  std::int64_t send_bwd;  // gradient to the previous virtual stage
  std::int64_t send_fwd_cpu, send_bwd_cpu;  // the sender's own time per send
  std::int64_t swap;      // one direction over the host link
  std::int64_t kept, swap_bytes, recompute_peak, workspace, out_bytes, in_bytes;
  std::int32_t first, last;
  struct Bucket {
    std::int64_t ms, ready_before_end, bytes;
    std::int32_t first, last;
  };
  std::vector<Bucket> buckets;  // gradient sync over the replicas, in ready order
  // The stage's swapped layers in runs of neighbours, each with its bytes:
  // one transfer per run in layer order, so the events say which layers of
  // which microbatch are on the host link when (explain, the studio).
  struct SwapRun {
    std::int32_t first, last;
    std::int64_t bytes;
    std::int64_t stash;  // the run's W stash (split backward)
  };
  std::vector<SwapRun> swap_runs;
  std::int64_t last_grad_end = kUnset;  // the latest backward that completed its gradients
};

struct MemoryDelta {
  std::int64_t t, delta;
  bool operator>(const MemoryDelta& o) const { return t != o.t ? t > o.t : delta > o.delta; }
};

struct DeviceState {
  std::int64_t cursor = 0, length = 0;
  std::int64_t free = 0;            // compute stream
  std::int64_t link_fwd_free = 0;   // to device + 1 (mod p)
  std::int64_t link_bwd_free = 0;   // to any other device (device - 1)
  std::int64_t swap_out_free = 0, swap_in_free = 0;
  std::int64_t swapin_done = kUnset;  // for the next backward
  std::int64_t busy = 0;
  std::int64_t collective_free = 0;  // the replicas' all-reduce stream
  std::int64_t sync = 0, sync_exposed = 0;
  std::int64_t tensor = 0;  // the tensor group's all-reduces (blocking the compute stream)
  std::int64_t last_end = 0;
  std::int64_t first_start = kUnset, last_compute_end = 0;
  std::int64_t memory = 0, peak = 0, static_bytes = 0;
  std::priority_queue<MemoryDelta, std::vector<MemoryDelta>, std::greater<>> pending;
  bool queued = false;
};

class Simulation {
 public:
  Simulation(const SimInput& in, EventSink* sink) : in_(in), sched_(*in.schedule), sink_(sink) {
    p_ = sched_.devices();
    V_ = sched_.virtual_stages();
    M_ = sched_.span_microbatches();
    if (static_cast<int>(in.plan->stages.size()) != V_)
      throw std::invalid_argument("plan has " + std::to_string(in.plan->stages.size()) + " stages, the schedule needs " +
                                  std::to_string(V_));
    validate_plan(*in.plan, in.profile->size());
    if (!in.slowdown.empty() && static_cast<int>(in.slowdown.size()) != p_)
      throw std::invalid_argument("slowdown has " + std::to_string(in.slowdown.size()) + " entries, the schedule has " +
                                  std::to_string(p_) + " devices");
    build_stages();
    fwd_arrival_.assign(static_cast<size_t>(V_) * M_, kUnset);
    bwd_arrival_.assign(static_cast<size_t>(V_) * M_, kUnset);
    if (any_swap_) swap_out_done_.assign(static_cast<size_t>(V_) * M_, kUnset);
    if (any_swap_) stash_out_done_.assign(static_cast<size_t>(V_) * M_, kUnset);
    dev_.resize(p_);
    held_buckets_.assign(p_, 0);
    for (int d = 0; d < p_; ++d) {
      dev_[d].length = sched_.length(d);
      std::int64_t st = 0;
      for (int c = 0; c < sched_.chunks(); ++c) st += static_bytes_[sched_.virtual_stage(d, c)];
      dev_[d].static_bytes = st;
      add_memory(d, 0, st);
    }
  }

  SimResult run() {
    std::vector<int> work;
    for (int d = p_ - 1; d >= 0; --d) {
      work.push_back(d);
      dev_[d].queued = true;
    }
    while (!work.empty()) {
      int d = work.back();
      work.pop_back();
      dev_[d].queued = false;
      if (!advance(d)) continue;
      for (int n : {(d + 1) % p_, (d + p_ - 1) % p_}) {
        if (!dev_[n].queued && dev_[n].cursor < dev_[n].length) {
          dev_[n].queued = true;
          work.push_back(n);
        }
      }
    }
    for (int d = 0; d < p_; ++d) {
      if (dev_[d].cursor < dev_[d].length) {
        Action a = sched_.action(d, dev_[d].cursor);
        const char* what = a.kind == ActionKind::Forward          ? "forward"
                           : a.kind == ActionKind::BackwardInput  ? "input gradient"
                           : a.kind == ActionKind::BackwardWeight ? "weight gradient"
                                                                  : "backward";
        std::ostringstream os;
        os << "schedule deadlock: device " << d << " waits forever at action " << dev_[d].cursor << " (" << what
           << " of microbatch " << a.microbatch
           << ", chunk " << a.chunk << ")";
        throw std::logic_error(os.str());
      }
      flush_memory(d, INT64_MAX);
    }
    return summarise();
  }

 private:
  void build_stages() {
    const auto& dev = in_.device;
    overhead_ = to_ns(dev.action_overhead_us * 1e-3);
    vs_.resize(V_);
    static_bytes_.resize(V_);
    for (int j = 0; j < V_; ++j) {
      const auto& r = in_.plan->stages[j];
      StageCost c = stage_cost(*in_.profile, r, in_.plan->policy);
      VStage& v = vs_[j];
      v.first = r.first_layer;
      v.last = r.last_layer;
      v.device = sched_.device_of_virtual_stage(j);
      double slow = in_.slowdown.empty() ? 1.0 : in_.slowdown.at(v.device);
      // PipeDream's per-stage replication (Plan::replicas), approximated
      // (docs/simulator.md): the stage's `share` workers in this pipeline
      // take its microbatches round-robin, which in steady state computes
      // 1 / share of each microbatch's time; its gradients are all-reduced
      // over all its replicas, share x parallel.data.
      const int share = in_.plan->stage_share(j);
      const int group = share * std::max(1, in_.sync.replicas);
      GradientSync stage_sync = in_.sync;
      stage_sync.replicas = group;
      sync_on_ = sync_on_ || stage_sync.enabled();
      const double per_mb = slow / share;
      v.fwd = to_ns(c.fwd_ms * per_mb);
      v.bwd = to_ns(c.bwd_ms * per_mb);
      v.bwd_weight = to_ns(c.bwd_weight_ms * per_mb);
      v.bwd_input = v.bwd - v.bwd_weight;
      v.w_stash = static_cast<std::int64_t>(c.w_stash_bytes_per_mb);
      // Only a split backward holds a stash from B to W.
      v.w_stash_swap = sched_.splits_backward() ? static_cast<std::int64_t>(c.w_stash_swap_bytes_per_mb) : 0;
      v.stash_swap = to_ns(transfer_ms(static_cast<std::uint64_t>(v.w_stash_swap), dev.host_link_gbps, 0));
      v.recompute = to_ns(c.recompute_ms * per_mb);
      // Slowed like the compute around them (a straggler holds its group).
      v.tp_fwd = std::min(v.fwd, to_ns(c.tensor_fwd_ms * per_mb));
      v.tp_bwd = std::min(v.bwd_input, to_ns(c.tensor_bwd_ms * per_mb));
      v.tp_recompute = std::min(v.recompute, to_ns(c.tensor_recompute_ms * per_mb));
      v.tp_fwd_bytes = static_cast<std::int64_t>(c.tensor_fwd_bytes);
      v.tp_bwd_bytes = static_cast<std::int64_t>(c.tensor_bwd_bytes);
      v.tp_recompute_bytes = static_cast<std::int64_t>(c.tensor_recompute_bytes);
      v.optimizer = to_ns(c.optimizer_ms * slow);
      // A V-shaped schedule's turn (virtual stages p-1 and p) stays on one device.
      bool next_remote = j + 1 < V_ && sched_.device_of_virtual_stage(j + 1) != v.device;
      bool prev_remote = j > 0 && sched_.device_of_virtual_stage(j - 1) != v.device;
      v.out_bytes = static_cast<std::int64_t>(c.output_bytes);
      // Each cut at its own link: replicas and nodes place stages apart.
      const LinkSpeed own{dev.link_gbps, dev.link_latency_us, false};
      const LinkSpeed next_link =
          next_remote ? pipeline_link(in_.sync, v.device, sched_.device_of_virtual_stage(j + 1), own) : own;
      const LinkSpeed prev_link =
          prev_remote ? pipeline_link(in_.sync, v.device, sched_.device_of_virtual_stage(j - 1), own) : own;
      v.send_fwd = next_remote ? to_ns(transfer_ms(c.output_bytes, next_link.gbps, next_link.latency_us)) : 0;
      std::uint64_t in_bytes = j > 0 ? in_.profile->boundary_bytes(r.first_layer - 1) : 0;
      v.in_bytes = static_cast<std::int64_t>(in_bytes);
      v.send_bwd = prev_remote ? to_ns(transfer_ms(in_bytes, prev_link.gbps, prev_link.latency_us)) : 0;
      for (const SyncBucket& b : sync_buckets(*in_.profile, r, stage_sync, v.device, sched_.splits_backward(), own))
        v.buckets.push_back({to_ns(b.ms), to_ns(b.ready_before_end_ms * per_mb), static_cast<std::int64_t>(b.bytes),
                             b.first_layer, b.last_layer});
      v.send_fwd_cpu = next_remote ? to_ns(send_cpu_ms(dev, c.output_bytes)) : 0;
      v.send_bwd_cpu = prev_remote ? to_ns(send_cpu_ms(dev, in_bytes)) : 0;
      v.swap = to_ns(transfer_ms(c.swap_bytes_per_mb, dev.host_link_gbps, 0));
      v.kept = static_cast<std::int64_t>(c.kept_bytes_per_mb);
      v.swap_bytes = static_cast<std::int64_t>(c.swap_bytes_per_mb);
      for (int l = r.first_layer; l <= r.last_layer; ++l) {
        if (in_.plan->policy[l] != MemoryPolicy::Swap) continue;
        const auto bytes = static_cast<std::int64_t>(in_.profile->layers[l].activation_bytes);
        const auto stash = v.w_stash_swap > 0 ? static_cast<std::int64_t>(w_stash_bytes(in_.profile->layers[l])) : 0;
        if (!v.swap_runs.empty() && v.swap_runs.back().last == l - 1) {
          v.swap_runs.back().last = l;
          v.swap_runs.back().bytes += bytes;
          v.swap_runs.back().stash += stash;
        } else {
          v.swap_runs.push_back({l, l, bytes, stash});
        }
      }
      v.recompute_peak = static_cast<std::int64_t>(c.recompute_peak_bytes);
      v.workspace = static_cast<std::int64_t>(c.workspace_bytes);
      any_swap_ = any_swap_ || c.swap_bytes_per_mb > 0 || v.w_stash_swap > 0;
      int d = v.device;
      int versions = sched_.weight_versions(d);
      static_bytes_[j] = static_cast<std::int64_t>(c.static_bytes + c.transfer_buffer_bytes + (versions - 1) * c.param_bytes);
    }
  }

  void emit(int d, EventKind k, int mb, int chunk, const VStage& v, std::int64_t s, std::int64_t e, std::int64_t bytes) {
    emit_layers(d, k, mb, chunk, v.first, v.last, s, e, bytes);
  }

  void emit_layers(int d, EventKind k, int mb, int chunk, std::int32_t first, std::int32_t last, std::int64_t s,
                   std::int64_t e, std::int64_t bytes) {
    ++events_;
    if (is_busy(k) && e > s) {  // an empty step occupies nothing
      auto& st = dev_[d];
      if (st.first_start == kUnset || s < st.first_start) st.first_start = s;
      st.last_compute_end = std::max(st.last_compute_end, e);
    }
    if (!sink_) return;
    Event ev;
    ev.start_ns = s;
    ev.end_ns = e;
    ev.bytes = bytes;
    ev.stage = d;
    ev.microbatch = mb;
    ev.chunk = static_cast<std::int16_t>(chunk);
    ev.kind = k;
    ev.first_layer = first;
    ev.last_layer = last;
    sink_->on_event(ev);
  }

  // One stage's offload or reload of a microbatch over [s, e), of its
  // activations or (`stash`) of W's stash: an event per run of swapped
  // layers with bytes to move, back to back in layer order, each its share
  // of the time by bytes (the ends rounded from the start, so they meet at e).
  void emit_swap(int d, EventKind k, int mb, int chunk, const VStage& v, std::int64_t s, std::int64_t e,
                 bool stash = false) {
    const std::int64_t total = stash ? v.w_stash_swap : v.swap_bytes;
    std::int64_t done = 0, t = s;
    for (const auto& run : v.swap_runs) {
      const std::int64_t bytes = stash ? run.stash : run.bytes;
      if (bytes == 0) continue;
      done += bytes;
      const std::int64_t to =
          done == total ? e : s + std::llround(static_cast<double>(e - s) * static_cast<double>(done) / static_cast<double>(total));
      emit_layers(d, k, mb, chunk, run.first, run.last, t, to, bytes);
      t = to;
    }
  }

  // A compute action [s, e) whose last `tp` ns are its tensor group's
  // all-reduces (Megatron's run between its matrix products, blocking
  // them; drawn as one event at the end, their sum, over the same layers).
  void emit_with_tensor(int d, EventKind k, int mb, int chunk, const VStage& v, std::int64_t s, std::int64_t e,
                        std::int64_t tp, std::int64_t tp_bytes) {
    if (tp <= 0) {
      emit(d, k, mb, chunk, v, s, e, 0);
      return;
    }
    emit(d, k, mb, chunk, v, s, e - tp, 0);
    emit(d, EventKind::TensorAllReduce, mb, chunk, v, e - tp, e, tp_bytes);
  }

  void add_memory(int d, std::int64_t t, std::int64_t delta) {
    if (delta != 0) dev_[d].pending.push({t, delta});
  }

  // Applies every memory change up to time t, in time order.
  void flush_memory(int d, std::int64_t t) {
    auto& s = dev_[d];
    while (!s.pending.empty() && s.pending.top().t <= t) {
      auto m = s.pending.top();
      s.pending.pop();
      s.memory += m.delta;
      s.peak = std::max(s.peak, s.memory);
      if (sink_) sink_->on_memory(d, m.t, s.memory);
    }
  }

  // The sender's FIFO towards the device running virtual stage `to`: one
  // channel to the next device (mod p), one to the previous.
  std::int64_t& link_to(int d, int to) {
    int target = sched_.device_of_virtual_stage(to);
    return target == (d + 1) % p_ ? dev_[d].link_fwd_free : dev_[d].link_bwd_free;
  }

  std::int64_t& fwd_arrival(int j, int mb) { return fwd_arrival_[static_cast<size_t>(j) * M_ + mb]; }
  std::int64_t& bwd_arrival(int j, int mb) { return bwd_arrival_[static_cast<size_t>(j) * M_ + mb]; }

  // Swap-in for the action right after action `next_index`, issued when
  // the action before it starts so the copy overlaps that compute: a
  // backward's (or B's) activations, or a W's stash where its B sent it
  // out. Issued from a backward (`after_offloads`), it also waits for the
  // device's swap-outs: the backward still holds its own reloaded
  // activations, so a third buffer (a forward's going out) would break
  // peak_memory_bound's two buffers beside a backward.
  void prefetch_swap_in(int d, std::int64_t next_index, std::int64_t issue_time, bool after_offloads = false) {
    auto& s = dev_[d];
    s.swapin_done = kUnset;
    if (!any_swap_ || next_index >= s.length) return;
    Action n = sched_.action(d, next_index);
    const bool stash = n.kind == ActionKind::BackwardWeight;
    if (n.kind != ActionKind::Backward && n.kind != ActionKind::BackwardInput && !stash) return;
    int j = sched_.virtual_stage(d, n.chunk);
    const VStage& v = vs_[j];
    if ((stash ? v.w_stash_swap : v.swap_bytes) == 0) return;
    std::int64_t out_done = (stash ? stash_out_done_ : swap_out_done_)[static_cast<size_t>(j) * M_ + n.microbatch];
    if (stash && out_done == kUnset) return;  // kept: W follows its own B
    std::int64_t start = std::max({issue_time, out_done, s.swap_in_free, after_offloads ? s.swap_out_free : 0});
    std::int64_t end = start + (stash ? v.stash_swap : v.swap);
    s.swap_in_free = end;
    s.swapin_done = end;
    add_memory(d, start, stash ? v.w_stash_swap : v.swap_bytes);
    emit_swap(d, EventKind::SwapIn, n.microbatch, n.chunk, v, start, end, stash);
  }

  // B's end sends the swapped layers' W stash to the host on the outbound
  // channel (after the device's offloads before it), unless the device's
  // next action is this microbatch's W: the round trip would only delay it,
  // and the stash held through that W is the W's own reload buffer.
  void offload_stash(int d, int j, const Action& a, std::int64_t b_end) {
    auto& s = dev_[d];
    if (s.cursor + 1 < s.length) {
      const Action n = sched_.action(d, s.cursor + 1);
      if (n.kind == ActionKind::BackwardWeight && n.chunk == a.chunk && n.microbatch == a.microbatch) return;
    }
    const VStage& v = vs_[j];
    const std::int64_t so = std::max(b_end, s.swap_out_free), se = so + v.stash_swap;
    s.swap_out_free = se;
    stash_out_done_[static_cast<size_t>(j) * M_ + a.microbatch] = se;
    add_memory(d, se, -v.w_stash_swap);
    emit_swap(d, EventKind::SwapOut, a.microbatch, a.chunk, v, so, se, /*stash=*/true);
  }

  // The replicas' all-reduce of the gradients device d's optimizer step
  // applies: every bucket of the virtual stages it steps starts when its
  // layers' gradients exist (after the stage's latest backward, less what
  // that backward computes after them) and the collective stream is free,
  // in the order they become ready. Returns when the step may start: the
  // device is free and the last bucket is done.
  std::int64_t synchronise_gradients(int d, const Action& a) {
    auto& s = dev_[d];
    struct Ready {
      std::int64_t t;
      int j;
      const VStage::Bucket* b;
    };
    std::vector<Ready> ready;
    const int steps = sched_.flushes() ? sched_.chunks() : 1;
    for (int c = 0; c < steps; ++c) {
      const int j = sched_.virtual_stage(d, c);
      const VStage& v = vs_[j];
      if (v.last_grad_end == kUnset) continue;
      for (const auto& b : v.buckets) ready.push_back({std::max<std::int64_t>(0, v.last_grad_end - b.ready_before_end), j, &b});
    }
    std::stable_sort(ready.begin(), ready.end(), [](const Ready& x, const Ready& y) { return x.t < y.t; });
    std::int64_t done = s.free;
    for (const Ready& r : ready) {
      const std::int64_t start = std::max(r.t, s.collective_free), end = start + r.b->ms;
      s.collective_free = end;
      s.sync += r.b->ms;
      add_memory(d, start, r.b->bytes);
      held_buckets_[d] += r.b->bytes;
      emit_layers(d, EventKind::AllReduce, a.microbatch, sched_.chunk_of_virtual_stage(r.j), r.b->first, r.b->last,
                  start, end, r.b->bytes);
      done = std::max(done, end);
    }
    s.sync_exposed += done - s.free;
    return done;
  }

  // The buckets' flat buffers are freed once the step has applied them.
  void release_buckets(int d, std::int64_t t) {
    add_memory(d, t, -held_buckets_[d]);
    held_buckets_[d] = 0;
  }

  // Runs device d's actions until one is blocked. Returns whether any ran.
  bool advance(int d) {
    auto& s = dev_[d];
    bool progressed = false;
    while (s.cursor < s.length) {
      Action a = sched_.action(d, s.cursor);
      if (a.kind == ActionKind::OptimizerStep) {
        std::int64_t opt = 0;
        if (sched_.flushes()) {
          for (int c = 0; c < sched_.chunks(); ++c) opt += vs_[sched_.virtual_stage(d, c)].optimizer;
        } else {
          opt = vs_[sched_.virtual_stage(d, 0)].optimizer;
        }
        std::int64_t start = s.free;
        if (sync_on_) start = synchronise_gradients(d, a);
        std::int64_t end = start + opt;
        if (sync_on_) release_buckets(d, end);
        // Emitted when it takes no time too: the steps delimit the iterations
        // a run's analysis finds (PipeDream's two overlapping ones).
        emit(d, EventKind::OptimizerStep, a.microbatch, 0, vs_[sched_.virtual_stage(d, 0)], start, end, 0);
        s.busy += opt;
        s.free = end + overhead_;
        s.last_end = end;
        if (a.microbatch >= 0 && d == 0) step_end_stage0_.push_back(end);
        ++s.cursor;
        progressed = true;
        continue;
      }
      int j = sched_.virtual_stage(d, a.chunk);
      const VStage& v = vs_[j];
      int mb = a.microbatch;
      if (a.kind == ActionKind::Forward) {
        std::int64_t ready = 0;
        if (j > 0) {
          ready = fwd_arrival(j, mb);
          if (ready == kUnset) break;
        }
        std::int64_t start = std::max(s.free, ready);
        flush_memory(d, start);
        std::int64_t end = start + v.fwd;
        add_memory(d, start, v.kept + v.swap_bytes);
        emit_with_tensor(d, EventKind::Forward, mb, a.chunk, v, start, end, v.tp_fwd, v.tp_fwd_bytes);
        if (v.swap_bytes > 0) {
          std::int64_t so = std::max(end, s.swap_out_free), se = so + v.swap;
          s.swap_out_free = se;
          swap_out_done_[static_cast<size_t>(j) * M_ + mb] = se;
          add_memory(d, se, -v.swap_bytes);
          emit_swap(d, EventKind::SwapOut, mb, a.chunk, v, so, se);
        }
        // After this forward's own swap-out is known: the next action may be
        // this microbatch's backward.
        prefetch_swap_in(d, s.cursor + 1, start);
        if (j + 1 < V_) {
          std::int64_t arrive = end;
          if (v.send_fwd > 0) {
            std::int64_t& link = link_to(d, j + 1);
            std::int64_t ts = std::max(end, link);
            arrive = ts + v.send_fwd;
            link = arrive;
            emit(d, EventKind::Send, mb, a.chunk, v, ts, arrive, v.out_bytes);
          }
          fwd_arrival(j + 1, mb) = arrive;
        }
        // The send's hold occupies the stage (it starts nothing else until
        // the copy is done) but is not busy time, like the host time after
        // an action: busy is what event_kinds.h says it is, everywhere.
        s.busy += v.fwd - v.tp_fwd;
        s.tensor += v.tp_fwd;
        s.free = end + v.send_fwd_cpu + overhead_;
      } else if (a.kind == ActionKind::BackwardWeight) {
        // Needs only this stage's own B (earlier in the device's order) and,
        // where B sent the swapped layers' stash out, its reload: runs as
        // soon as both are done, then frees what B left for it.
        const bool reload = v.w_stash_swap > 0 && stash_out_done_[static_cast<size_t>(j) * M_ + mb] != kUnset;
        if (reload && s.swapin_done == kUnset) prefetch_swap_in(d, s.cursor, s.free);
        std::int64_t start = std::max(s.free, reload ? s.swapin_done : 0);
        flush_memory(d, start);
        std::int64_t end = start + v.bwd_weight;
        emit(d, EventKind::BackwardWeight, mb, a.chunk, v, start, end, 0);
        vs_[j].last_grad_end = end;
        add_memory(d, end, -(v.w_stash + v.w_stash_swap));
        s.busy += v.bwd_weight;
        s.free = end + overhead_;
        prefetch_swap_in(d, s.cursor + 1, start);
      } else {
        const bool split = a.kind == ActionKind::BackwardInput;
        std::int64_t ready = 0;
        if (j + 1 < V_) {
          ready = bwd_arrival(j, mb);
          if (ready == kUnset) break;
        }
        if (v.swap_bytes > 0 && s.swapin_done == kUnset) prefetch_swap_in(d, s.cursor, std::max(s.free, ready));
        std::int64_t start = std::max({s.free, ready, v.swap_bytes > 0 ? s.swapin_done : 0});
        flush_memory(d, start);
        std::int64_t t = start;
        if (v.recompute > 0) {
          emit_with_tensor(d, EventKind::Recompute, mb, a.chunk, v, t, t + v.recompute, v.tp_recompute,
                           v.tp_recompute_bytes);
          t += v.recompute;
        }
        std::int64_t end = t + (split ? v.bwd_input : v.bwd);
        emit_with_tensor(d, split ? EventKind::BackwardInput : EventKind::Backward, mb, a.chunk, v, t, end, v.tp_bwd,
                         v.tp_bwd_bytes);
        if (!split) vs_[j].last_grad_end = end;
        add_memory(d, start, v.recompute_peak + v.workspace);
        // B keeps W's stash (each layer's input and output gradient) and
        // frees the rest; a full backward frees everything.
        add_memory(d, end,
                   -(v.recompute_peak + v.workspace + v.kept + v.swap_bytes) + (split ? v.w_stash + v.w_stash_swap : 0));
        if (j > 0) {
          std::int64_t arrive = end;
          if (v.send_bwd > 0) {
            std::int64_t& link = link_to(d, j - 1);
            std::int64_t ts = std::max(end, link);
            arrive = ts + v.send_bwd;
            link = arrive;
            emit(d, EventKind::Send, mb, a.chunk, v, ts, arrive, v.in_bytes);
          }
          bwd_arrival(j - 1, mb) = arrive;
        }
        s.busy += end - start - v.tp_bwd - (v.recompute > 0 ? v.tp_recompute : 0);
        s.tensor += v.tp_bwd + (v.recompute > 0 ? v.tp_recompute : 0);
        s.free = end + v.send_bwd_cpu + overhead_;
        // A backward right after this one (a flush's drain, GPipe's
        // backward phase) reloads behind this one's compute, not after it.
        prefetch_swap_in(d, s.cursor + 1, start, /*after_offloads=*/true);
        if (split && v.w_stash_swap > 0) offload_stash(d, j, a, end);
      }
      s.last_end = s.free;
      ++s.cursor;
      progressed = true;
    }
    return progressed;
  }

  SimResult summarise() {
    SimResult r;
    r.events = events_;
    std::int64_t span = 0;
    for (const auto& s : dev_) span = std::max(span, s.last_end);
    double iter_ns = static_cast<double>(span);
    if (sched_.flushes() && in_.iteration_cost == IterationCost::Window) {
      // Each device starts its next iteration once its own step is done
      // (and its first input is there): the longest device window.
      std::int64_t window = 0;
      for (const auto& s : dev_) window = std::max(window, s.last_end - std::max<std::int64_t>(s.first_start, 0));
      iter_ns = static_cast<double>(window);
    }
    double busy_scale = 1.0;
    if (!sched_.flushes()) {
      // Steady state: time between the ends of the two iterations at stage 0.
      int m = sched_.microbatches();
      if (static_cast<int>(step_end_stage0_.size()) >= 2 * m)
        iter_ns = static_cast<double>(step_end_stage0_[2 * m - 1] - step_end_stage0_[m - 1]);
      busy_scale = 0.5;
      // Two iterations may not reach the steady state when the busiest
      // device is not stage 0 (few microbatches): the period is never
      // shorter than that device's work per iteration.
      for (const auto& s : dev_) iter_ns = std::max(iter_ns, s.busy * busy_scale);
    }
    r.iteration_time_ms = iter_ns / 1e6;
    r.span_ms = static_cast<double>(span) / 1e6;
    r.replicas = std::max(1, in_.sync.replicas);
    r.tensor = std::max(1, in_.sync.tensor);
    double samples = static_cast<double>(sched_.microbatches()) * in_.microbatch_size * r.replicas;
    r.throughput_samples_per_s = iter_ns > 0 ? samples / (iter_ns / 1e9) : 0;
    // Busy shares and the bubble stay against the flushed span (as a
    // recording's, first event to last); window_bubble_fraction is the window's.
    const double shares_of = sched_.flushes() ? static_cast<double>(span) : iter_ns;
    double total_busy = 0;
    for (int d = 0; d < p_; ++d) {
      const auto& s = dev_[d];
      SimStage st;
      st.busy_ms = s.busy * busy_scale / 1e6;
      st.sync_ms = s.sync * busy_scale / 1e6;
      st.sync_exposed_ms = s.sync_exposed * busy_scale / 1e6;
      st.tensor_ms = s.tensor * busy_scale / 1e6;
      st.busy_fraction = busy_fraction(st.busy_ms * 1e6, shares_of);
      st.peak_memory_bytes = static_cast<std::uint64_t>(s.peak);
      st.first_start_ms = std::max<std::int64_t>(s.first_start, 0) / 1e6;
      st.last_end_ms = s.last_compute_end / 1e6;
      r.overlapped_iteration_ms = std::max(r.overlapped_iteration_ms, st.last_end_ms - st.first_start_ms);
      st.memory_budget_bytes = in_.device.memory_bytes;
      for (int c = 0; c < sched_.chunks(); ++c) {
        const VStage& v = vs_[sched_.virtual_stage(d, c)];
        st.time_ms += (v.fwd + v.bwd + v.recompute) / 1e6;
      }
      total_busy += st.busy_ms * 1e6;
      if (st.peak_memory_bytes > st.memory_budget_bytes && r.feasible) {
        r.feasible = false;
        r.oom_stage = d;
        std::ostringstream os;
        os.precision(3);
        os << std::fixed << "out of memory: stage " << d << " needs " << st.peak_memory_bytes / 1073741824.0
           << " GiB (" << st.peak_memory_bytes << " bytes) at peak, budget " << st.memory_budget_bytes / 1073741824.0
           << " GiB (" << st.memory_budget_bytes << " bytes)";
        r.reason = os.str();
      }
      r.stages.push_back(st);
    }
    r.bubble_fraction = bubble_fraction(total_busy, p_, shares_of);
    // The Zero Bubble paper's definition: over the overlapped window.
    r.window_bubble_fraction = bubble_fraction(total_busy, p_, r.overlapped_iteration_ms * 1e6);
    return r;
  }

  const SimInput& in_;
  const Schedule& sched_;
  EventSink* sink_;
  int p_ = 0, V_ = 0, M_ = 0;
  bool any_swap_ = false;
  bool sync_on_ = false;  // some stage has replicas to all-reduce with
  std::int64_t overhead_ = 0;  // per action, DeviceSpec::action_overhead_us
  std::vector<VStage> vs_;
  std::vector<std::int64_t> static_bytes_;
  std::vector<std::int64_t> fwd_arrival_, bwd_arrival_, swap_out_done_;
  std::vector<std::int64_t> stash_out_done_;  // per (virtual stage, microbatch); unset: W's stash stayed
  std::vector<DeviceState> dev_;
  std::vector<std::int64_t> step_end_stage0_;
  std::vector<std::int64_t> held_buckets_;  // per device: bucket bytes until its step
  std::uint64_t events_ = 0;
};

}  // namespace

SimResult simulate(const SimInput& in, EventSink* sink) {
  if (!in.profile || !in.plan || !in.schedule) throw std::invalid_argument("simulate: missing profile, plan or schedule");
  Simulation sim(in, sink);
  return sim.run();
}

}  // namespace pw
