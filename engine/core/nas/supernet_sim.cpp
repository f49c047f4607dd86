#include "core/nas/supernet_sim.h"

#include "core/events/bubble.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <stdexcept>

#include "core/cost/stage_cost.h"
#include "core/nas/device_cache_plan.h"
#include "core/nas/layer_cache.h"

namespace pw::nas {
namespace {

std::int64_t ns(double ms) { return std::llround(ms * 1e6); }
constexpr std::int64_t kKeyStride = kCandidateKeyStride;

enum class EvType { FwdArrive, BwdArrive, ComputeDone, UpdateDone };
struct Ev {
  std::int64_t t, seq;
  EvType type;
  int stage;
  Unit unit;
  bool backward;
  bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class SupernetSimulation {
 public:
  SupernetSimulation(const SupernetSimInput& in, EventSink* sink, SubnetObserver* obs)
      : in_(in), sp_(*in.space), seq_(*in.sequence), sink_(sink), obs_(obs) {
    p_ = static_cast<int>(in.stages.size());
    if (p_ < 1) throw std::invalid_argument("supernet simulation needs >= 1 stage");
    for (int s = 0; s < p_; ++s) {
      const auto& r = in.stages[s];
      if (r.first < 0 || r.last >= sp_.size() || (s > 0 && r.first != in.stages[s - 1].last + 1))
        throw std::invalid_argument("stage ranges must tile the choice layers in order");
      if (r.size() < 1 && !(s == p_ - 1 && s > 0 && sp_.has_head))
        throw std::invalid_argument("only the last stage may hold no choice layer (the head alone)");
    }
    if (in.stages.back().last != sp_.size() - 1) throw std::invalid_argument("stages must cover every choice layer");
    driver_ = make_driver(in.mode, in.stages, in.sequence, in.window, in.microbatches);
    scale_ = driver_->micro_per_subnet() == 1 ? in.microbatches : 1;
    stage_.resize(p_);
    dirty_.assign(p_, false);
    rule_ = in.mode == SupernetMode::GPipe || in.mode == SupernetMode::PipeDream ? Eviction::Lru : in.eviction;
    for (int s = 0; s < p_; ++s) {
      std::int64_t cap = cache_capacity(in.budget_bytes, sp_, s, p_);
      stage_[s].cache = std::make_unique<LayerCache>(
          cap, in.device.host_link_gbps > 0 ? in.device.host_link_gbps : 128.0,
          [this, s](bool load, std::int64_t key, std::int64_t a, std::int64_t b, std::int64_t bytes) {
            transfer_event(s, load, key, a, b, bytes);
          });
      if (in.cache_model == CacheModel::Planned) {
        if (in.mode != SupernetMode::Csp && in.mode != SupernetMode::Sequential)
          throw std::invalid_argument("the planned device cache follows CSP's sequence order (csp, sequential)");
        stage_[s].plan = std::make_unique<CachePlan>(
            plan_device_cache(stage_cache_steps(sp_, seq_, in.stages[s]), cap, rule_));
        stage_[s].schedule = std::make_unique<CacheSchedule>(stage_[s].plan.get(), std::max(1, in.window));
      }
      if (rule_ == Eviction::Belady) {
        std::vector<std::vector<std::int64_t>> uses;
        for (int b = 0; b < static_cast<int>(seq_.size()); ++b) {
          uses.emplace_back();
          for (const auto& it : items(s, b)) uses.back().push_back(it.key);
        }
        stage_[s].next_use = std::make_unique<NextUse>(uses);
      }
      stage_[s].cache->set_eviction(rule_, stage_[s].next_use.get());
    }
  }

  SupernetSimResult run() {
    for (int s = 0; s < p_; ++s) dispatch(s, 0);
    while (!q_.empty()) {
      Ev e = q_.top();
      q_.pop();
      handle(e);
      // A stage decides only once everything that happens at this instant
      // has happened: a stage freed at t must see a gradient that arrives at
      // t too, or it starts a forward and leaves that backward (and the
      // subnets it unblocks) waiting a whole action.
      if (q_.empty() || q_.top().t > e.t) settle(e.t);
    }
    if (!driver_->all_done())
      throw std::logic_error(std::string("supernet schedule stopped before all subnets finished (") +
                             to_string(in_.mode) + "): " + driver_->describe_stuck());
    return summarise();
  }

 private:
  struct StageState {
    bool busy = false;
    std::int64_t busy_ns = 0;
    std::unique_ptr<LayerCache> cache;
    std::unique_ptr<NextUse> next_use;  // Belady's knowledge of the sequence
    std::uint64_t uses = 0, hits = 0;
    std::int64_t stall_ns = 0;
    WaitReporter waits;
    // Planned cache model: the plan, its progress, and since when the
    // stage is idle because the forward it would run waits for its step.
    std::unique_ptr<CachePlan> plan;
    std::unique_ptr<CacheSchedule> schedule;
    std::int64_t stalled_since = -1;
  };

  const Candidate& cand(int l, int b) const { return sp_.layers[l].candidates[seq_[b][l]]; }

  double sum_ms(int s, int b, double LayerProfile::*field) const {
    double t = 0;
    for (int l = in_.stages[s].first; l <= in_.stages[s].last; ++l) t += cand(l, b).cost.*field;
    return t;
  }
  std::int64_t fwd_ns(int s, int b) const {
    double t = sum_ms(s, b, &LayerProfile::fwd_ms);
    if (s == 0 && sp_.has_stem) t += sp_.stem.fwd_ms;
    if (s == p_ - 1 && sp_.has_head) t += sp_.head.fwd_ms;
    return ns(t * scale_);
  }
  std::int64_t bwd_ns(int s, int b) const {
    double t = sum_ms(s, b, &LayerProfile::bwd_ms);
    if (s == 0 && sp_.has_stem) t += sp_.stem.bwd_ms;
    if (s == p_ - 1 && sp_.has_head) t += sp_.head.bwd_ms;
    return ns(t * scale_);
  }
  std::int64_t upd_ns(int s, int b) const { return ns(sum_ms(s, b, &LayerProfile::optimizer_ms)); }
  std::int64_t send_ns(int s, int b, bool forward, std::int64_t* bytes) const {
    if (!in_.communication) return *bytes = 0;
    const auto& r = in_.stages[s];
    // An empty stage (the head alone) passes on its input: the previous
    // stage's last layer's output.
    std::uint64_t per = forward || r.size() == 0 ? cand(r.last, b).cost.output_bytes : cand(r.first, b).cost.input_bytes;
    *bytes = static_cast<std::int64_t>(per) * scale_;
    return ns(transfer_ms(static_cast<std::uint64_t>(*bytes), in_.device.link_gbps > 0 ? in_.device.link_gbps : 100,
                          in_.device.link_latency_us));
  }
  std::vector<LayerCache::Item> items(int s, int b) const {
    std::vector<LayerCache::Item> out;
    for (int l = in_.stages[s].first; l <= in_.stages[s].last; ++l) {
      const auto& c = cand(l, b);
      out.push_back({l * kKeyStride + seq_[b][l], c.resident_bytes(), c.transfer_bytes()});
    }
    return out;
  }

  void push(std::int64_t t, EvType type, int s, Unit u, bool backward) {
    q_.push(Ev{t, seq_no_++, type, s, u, backward});
  }
  void emit(EventKind kind, int s, int subnet, std::int64_t a, std::int64_t b, std::int64_t bytes, int first,
            int last) {
    ++events_;
    if (!sink_) return;
    Event e;
    e.kind = kind;
    e.stage = s;
    e.microbatch = subnet;
    e.start_ns = a;
    e.end_ns = b;
    e.bytes = bytes;
    e.first_layer = first;
    e.last_layer = last;
    sink_->on_event(e);
  }
  void transfer_event(int s, bool load, std::int64_t key, std::int64_t a, std::int64_t b, std::int64_t bytes) {
    int layer = static_cast<int>(key / kKeyStride);
    emit(load ? EventKind::SwapIn : EventKind::SwapOut, s, static_cast<int>(key % kKeyStride), a, b, bytes, layer,
         layer);
    if (sink_) sink_->on_memory(s, a, stage_[s].cache->used_bytes());
  }

  void dispatch(int s, std::int64_t now) {
    auto& st = stage_[s];
    // Asked even while busy, so that waits are reported when they begin.
    std::vector<SubnetWait> waits;
    auto w = driver_->next(s, obs_ ? &waits : nullptr);
    if (obs_) report_waits(s, waits, now);
    // A new subnet's forward also needs room for its candidates beside
    // those of the subnets in flight here (pinned until their update).
    if (st.schedule) {
      advance_plan(s, now);
      if (w && !st.busy && !w->backward && w->unit.micro == 0 && !fits(s, w->unit.subnet) && st.stalled_since < 0)
        st.stalled_since = now;
    }
    if (w && !st.busy && (w->backward || w->unit.micro > 0 || fits(s, w->unit.subnet))) start(s, *w, now);
    prefetch(s, now);
  }

  bool fits(int s, int b) const {
    const auto& st = stage_[s];
    return st.schedule ? st.schedule->ready(b) : st.cache->can_fit(items(s, b));
  }
  void advance_plan(int s, std::int64_t now) {
    auto& st = stage_[s];
    while (const CacheStep* step = st.schedule->advance()) st.cache->apply(*step, now);
  }

  // Dispatches every stage whose situation changed at time t.
  void settle(std::int64_t t) {
    for (int s = 0; s < p_; ++s)
      if (dirty_[s]) {
        dirty_[s] = false;
        dispatch(s, t);
      }
  }

  void report_waits(int s, const std::vector<SubnetWait>& waits, std::int64_t now) {
    waits_ += stage_[s].waits.report(waits, now, obs_);
  }

  void start(int s, const Work& w, std::int64_t now) {
    auto& st = stage_[s];
    driver_->started(s, w);
    if (st.stalled_since >= 0) {  // the stage sat idle: its next forward waited for its cache step
      st.stall_ns += now - st.stalled_since;
      st.stalled_since = -1;
    }
    int b = w.unit.subnet;
    const auto& r = in_.stages[s];
    st.busy = true;
    if (w.backward) {
      std::int64_t end = now + bwd_ns(s, b);
      if (obs_) obs_->on_state(b, SubnetState::Backward, s, now);
      emit(EventKind::Backward, s, b, now, end, 0, r.first, r.last);
      st.busy_ns += end - now;
      push(end, EvType::ComputeDone, s, w.unit, true);
      return;
    }
    if (s == 0 && w.unit.micro == 0) {
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
      if (obs_) obs_->on_subnet(b, seq_[b], now);
    }
    auto its = items(s, b);
    if (w.unit.micro == 0 && st.schedule) {  // the plan's counts: resident from an earlier use, or loaded
      const auto& step = st.plan->steps[b];
      st.uses += step.keys.size();
      st.hits += step.hits;
      st.schedule->started(b);
    } else if (w.unit.micro == 0) {  // the subnet's first use of its layers at this stage
      for (const auto& it : its) {
        ++st.uses;
        if (st.cache->resident_by(it.key, now)) ++st.hits;
      }
    }
    std::int64_t ready = st.cache->ensure(its, now);
    if (w.unit.micro == 0) {
      st.cache->pin(its, now);
      if (st.next_use) st.next_use->consume(b);
    }
    std::int64_t begin = std::max(now, ready);
    st.stall_ns += begin - now;
    std::int64_t end = begin + fwd_ns(s, b);
    if (obs_) obs_->on_state(b, SubnetState::Forward, s, begin);
    emit(EventKind::Forward, s, b, begin, end, 0, r.first, r.last);
    st.busy_ns += end - begin;
    push(end, EvType::ComputeDone, s, w.unit, false);
  }

  void handle(const Ev& e) {
    int s = e.stage;
    int b = e.unit.subnet;
    auto& st = stage_[s];
    switch (e.type) {
      case EvType::FwdArrive:
        driver_->forward_arrived(s, e.unit);
        dirty_[s] = true;
        break;
      case EvType::BwdArrive:
        driver_->backward_arrived(s, e.unit);
        dirty_[s] = true;
        break;
      case EvType::ComputeDone:
        st.busy = false;
        if (!e.backward) {
          if (s + 1 < p_) {
            std::int64_t bytes = 0;
            std::int64_t end = e.t + send_ns(s, b, true, &bytes);
            if (bytes > 0) emit(EventKind::Send, s, b, e.t, end, bytes, in_.stages[s].last, in_.stages[s].last);
            push(end, EvType::FwdArrive, s + 1, e.unit, false);
          } else {
            driver_->backward_arrived(s, e.unit);
          }
          dirty_[s] = true;
          break;
        }
        if (s > 0) {
          std::int64_t bytes = 0;
          std::int64_t end = e.t + send_ns(s, b, false, &bytes);
          if (bytes > 0) emit(EventKind::Send, s, b, e.t, end, bytes, in_.stages[s].first, in_.stages[s].first);
          push(end, EvType::BwdArrive, s - 1, e.unit, true);
        }
        if (driver_->backward_finished(s, e.unit)) {
          std::int64_t end = e.t + upd_ns(s, b);
          st.busy = true;
          st.busy_ns += end - e.t;
          if (obs_) obs_->on_state(b, SubnetState::Update, s, e.t);
          emit(EventKind::OptimizerStep, s, b, e.t, end, 0, in_.stages[s].first, in_.stages[s].last);
          push(end, EvType::UpdateDone, s, e.unit, false);
        } else {
          dirty_[s] = true;
        }
        break;
      case EvType::UpdateDone:
        st.busy = false;
        st.cache->unpin(items(s, b), true);
        if (st.schedule) st.schedule->released(b);
        driver_->update_finished(s, b);
        st.waits.forget(b);
        makespan_ = std::max(makespan_, e.t);
        if (s == 0) {
          --in_flight_;
          if (obs_) obs_->on_state(b, SubnetState::Done, 0, e.t);
        }
        std::fill(dirty_.begin(), dirty_.end(), true);
        break;
    }
  }

  // Load the layers of the subnets the stage's schedule predicts next, in
  // that order, while they fit beside the pinned ones.
  void prefetch(int s, std::int64_t now) {
    if (stage_[s].schedule) return advance_plan(s, now);
    auto preds = driver_->predict(s, in_.prefetch_depth);
    std::vector<std::int64_t> protect;
    for (int b : preds) {
      auto its = items(s, b);
      if (!stage_[s].cache->prefetch(its, now, protect)) break;
      for (const auto& it : its) protect.push_back(it.key);
    }
  }

  SupernetSimResult summarise() const {
    SupernetSimResult r;
    r.mode = to_string(in_.mode);
    r.reproducible = driver_->reproducible();
    r.eviction = to_string(rule_);
    r.cache_model = to_string(in_.cache_model);
    r.subnets = static_cast<int>(seq_.size());
    r.makespan_ms = makespan_ / 1e6;
    r.subnets_per_s = makespan_ > 0 ? r.subnets / (makespan_ / 1e9) : 0;
    double busy = 0;
    for (const auto& st : stage_) {
      busy += st.busy_ns;
      r.stage_busy_fraction.push_back(busy_fraction(static_cast<double>(st.busy_ns), static_cast<double>(makespan_)));
      r.loads += st.cache->loads();
      r.evictions += st.cache->evictions();
      r.load_gib += st.cache->load_bytes() / (1024.0 * 1024 * 1024);
      r.peak_resident_bytes.push_back(static_cast<std::uint64_t>(st.cache->peak_bytes()));
      StageCacheFigures f;
      f.uses = st.uses;
      f.hits = st.hits;
      f.loads = st.cache->loads();
      f.evictions = st.cache->evictions();
      f.load_bytes = static_cast<double>(st.cache->load_bytes());
      f.stall_ms = st.stall_ns / 1e6;
      r.stage_cache.push_back(f);
      r.layer_uses += st.uses;
      r.resident_hits += st.hits;
      r.load_stall_ms += f.stall_ms;
    }
    // The pipeline simulator's and a recording's formula (events/bubble.h).
    r.utilisation = makespan_ > 0 ? 1.0 - bubble_fraction(busy, p_, static_cast<double>(makespan_)) : 0;
    r.events = events_;
    r.waits = waits_;
    r.max_in_flight = max_in_flight_;
    return r;
  }

  const SupernetSimInput& in_;
  const SearchSpace& sp_;
  const std::vector<Subnet>& seq_;
  EventSink* sink_;
  SubnetObserver* obs_;
  int p_ = 0, scale_ = 1;
  Eviction rule_ = Eviction::Lru;
  std::unique_ptr<SupernetDriver> driver_;
  std::vector<StageState> stage_;
  std::vector<bool> dirty_;  // stages to dispatch once the current instant settles
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> q_;
  std::int64_t seq_no_ = 0, makespan_ = 0;
  std::uint64_t events_ = 0, waits_ = 0;
  int in_flight_ = 0, max_in_flight_ = 0;
};
}  // namespace

const char* to_string(CacheModel m) { return m == CacheModel::Planned ? "planned" : "predictive"; }

SupernetSimResult simulate_supernet(const SupernetSimInput& in, EventSink* sink, SubnetObserver* observer) {
  if (!in.space || !in.sequence) throw std::invalid_argument("supernet simulation needs a space and a sequence");
  return SupernetSimulation(in, sink, observer).run();
}

}  // namespace pw::nas
