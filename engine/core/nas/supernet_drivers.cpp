#include "core/nas/supernet_drivers.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace pw::nas {
namespace {

// CSP over subnets; a subnet's batch may go through as m microbatches,
// which all read the same weights (no conflicting subnet can update them
// in between) and whose gradients accumulate before the one update.
class CspDriver final : public SupernetDriver {
 public:
  CspDriver(const std::vector<StageSlots>& stages, const std::vector<Subnet>* seq, int window, int m)
      : m_(m), st_(stages.size()) {
    for (size_t s = 0; s < stages.size(); ++s)
      csp_.emplace_back(static_cast<int>(s), static_cast<int>(stages.size()), stages[s], seq, window);
  }
  std::optional<Work> next(int s, std::vector<SubnetWait>* waits) override {
    auto& st = st_[s];
    // Whatever runs, CspStage reports the forwards that CSP holds back.
    auto a = csp_[s].next(waits);
    if (!st.bwd_ready.empty()) {
      auto [b, k] = *st.bwd_ready.begin();
      return Work{true, {b, k}};
    }
    for (const auto& [b, started] : st.fwd_started)  // subnets already past the CSP test here
      if (started < m_ && (s == 0 || st.fwd_ready.count({b, started}))) return Work{false, {b, started}};
    if (!a) return std::nullopt;
    return Work{false, {a->subnet, 0}};
  }
  void started(int s, const Work& w) override {
    auto& st = st_[s];
    Unit u = w.unit;
    if (w.backward) {
      st.bwd_ready.erase({u.subnet, u.micro});
      return;
    }
    st.fwd_ready.erase({u.subnet, u.micro});
    if (u.micro == 0) csp_[s].forward_started(u.subnet);
    ++st.fwd_started[u.subnet];
  }
  void forward_arrived(int s, Unit u) override {
    st_[s].fwd_ready.insert({u.subnet, u.micro});
    if (u.micro == 0) csp_[s].forward_ready(u.subnet);
  }
  void backward_arrived(int s, Unit u) override { st_[s].bwd_ready.insert({u.subnet, u.micro}); }
  bool backward_finished(int s, Unit u) override { return ++st_[s].bwd_done[u.subnet] == m_; }
  void update_finished(int s, int b) override {
    st_[s].fwd_started.erase(b);
    st_[s].bwd_done.erase(b);
    csp_[s].backward_done(b);
  }
  std::vector<int> predict(int s, int k) const override { return csp_[s].predicted_forwards(k); }
  int micro_per_subnet() const override { return m_; }
  bool reproducible() const override { return true; }
  bool all_done() const override { return csp_[0].all_done(); }
  std::string describe_stuck() const override {
    std::string out;
    for (const auto& c : csp_) {
      out += "stage " + std::to_string(c.stage()) + ": oldest unfinished " + std::to_string(c.oldest_unfinished());
      if (auto w = c.blocker(c.oldest_unfinished() + 1))
        out += ", subnet " + std::to_string(w->waiter) + " waits for " + std::to_string(w->waited_for);
      out += "; ";
    }
    return out;
  }

 private:
  struct StageState {
    std::map<int, int> fwd_started, bwd_done;  // per subnet: microbatches
    std::set<std::pair<int, int>> fwd_ready, bwd_ready;
  };
  int m_;
  std::vector<CspStage> csp_;
  std::vector<StageState> st_;
};

// One subnet per pipeline flush; its batch goes through as `m`
// microbatches, GPipe fill-drain or 1F1B (VPipe), then each stage updates
// once and the next subnet enters only after every stage has updated.
class FlushDriver final : public SupernetDriver {
 public:
  FlushDriver(int stages, int subnets, int m, bool one_f_one_b, bool prefetch)
      : p_(stages), n_(subnets), m_(m), f1b_(one_f_one_b), prefetch_(prefetch), st_(stages) {}
  std::optional<Work> next(int s, std::vector<SubnetWait>*) override {
    if (cur_ >= n_) return std::nullopt;
    auto& st = st_[s];
    bool fwd_left = st.fwd_started < m_;
    bool may_bwd = !st.bwd_ready.empty() && (f1b_ || !fwd_left);
    if (may_bwd) return Work{true, {cur_, *st.bwd_ready.begin()}};
    if (fwd_left && (s == 0 || st.fwd_ready.count(st.fwd_started)))
      return Work{false, {cur_, st.fwd_started}};
    return std::nullopt;
  }
  void started(int s, const Work& w) override {
    if (w.backward) st_[s].bwd_ready.erase(w.unit.micro);
    else ++st_[s].fwd_started;
  }
  void forward_arrived(int s, Unit u) override { st_[s].fwd_ready.insert(u.micro); }
  void backward_arrived(int s, Unit u) override { st_[s].bwd_ready.insert(u.micro); }
  bool backward_finished(int s, Unit) override { return ++st_[s].bwd_done == m_; }
  void update_finished(int, int) override {
    if (++updated_ < p_) return;
    ++cur_;  // flush complete: the next subnet may enter
    updated_ = 0;
    for (auto& st : st_) st = StageState{};
  }
  std::vector<int> predict(int, int k) const override {
    std::vector<int> out;
    if (!prefetch_) return out;
    for (int b = cur_; b < n_ && static_cast<int>(out.size()) < std::min(k, 2); ++b) out.push_back(b);
    return out;
  }
  int micro_per_subnet() const override { return m_; }
  bool reproducible() const override { return true; }
  bool all_done() const override { return cur_ >= n_; }
  std::string describe_stuck() const override { return "flush at subnet " + std::to_string(cur_); }

 private:
  struct StageState {
    int fwd_started = 0, bwd_done = 0;
    std::set<int> fwd_ready, bwd_ready;
  };
  int p_, n_, m_;
  bool f1b_, prefetch_;
  std::vector<StageState> st_;
  int cur_ = 0, updated_ = 0;
};

// PipeDream's asynchronous 1F1B applied across subnets: every subnet is
// one unit, stage s keeps at most p - s in flight, each backward is
// followed by the update, and nothing orders shared layers: a later subnet
// can read a layer before an earlier one has updated it.
class PipeDreamDriver final : public SupernetDriver {
 public:
  PipeDreamDriver(int stages, int subnets) : p_(stages), n_(subnets), st_(stages) {}
  std::optional<Work> next(int s, std::vector<SubnetWait>*) override {
    auto& st = st_[s];
    if (!st.bwd_ready.empty()) return Work{true, {*st.bwd_ready.begin(), 0}};
    if (st.in_flight >= p_ - s) return std::nullopt;
    if (s == 0) {
      if (admitted_ < n_) return Work{false, {admitted_, 0}};
      return std::nullopt;
    }
    if (!st.fwd_ready.empty()) return Work{false, {*st.fwd_ready.begin(), 0}};
    return std::nullopt;
  }
  void started(int s, const Work& w) override {
    auto& st = st_[s];
    if (w.backward) {
      st.bwd_ready.erase(w.unit.subnet);
      return;
    }
    ++st.in_flight;
    if (s == 0) ++admitted_;
    else st.fwd_ready.erase(w.unit.subnet);
  }
  void forward_arrived(int s, Unit u) override { st_[s].fwd_ready.insert(u.subnet); }
  void backward_arrived(int s, Unit u) override { st_[s].bwd_ready.insert(u.subnet); }
  bool backward_finished(int s, Unit) override {
    --st_[s].in_flight;
    return true;
  }
  void update_finished(int s, int) override {
    if (s == 0) ++done_;
  }
  std::vector<int> predict(int, int) const override { return {}; }
  int micro_per_subnet() const override { return 1; }
  bool reproducible() const override { return false; }
  bool all_done() const override { return done_ >= n_; }
  std::string describe_stuck() const override { return "admitted " + std::to_string(admitted_); }

 private:
  struct StageState {
    int in_flight = 0;
    std::set<int> fwd_ready, bwd_ready;
  };
  int p_, n_;
  std::vector<StageState> st_;
  int admitted_ = 0, done_ = 0;
};

const std::vector<std::string> kNames = {"csp", "sequential", "gpipe", "pipedream", "vpipe"};
}  // namespace

const char* to_string(SupernetMode m) { return kNames[static_cast<int>(m)].c_str(); }

std::optional<SupernetMode> supernet_mode_from_string(const std::string& s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<SupernetMode>(i);
  return std::nullopt;
}

std::vector<std::string> supernet_mode_names() { return kNames; }

std::unique_ptr<SupernetDriver> make_driver(SupernetMode mode, const std::vector<StageSlots>& stages,
                                            const std::vector<Subnet>* seq, int window, int microbatches) {
  int p = static_cast<int>(stages.size());
  int n = static_cast<int>(seq->size());
  switch (mode) {
    case SupernetMode::Csp: return std::make_unique<CspDriver>(stages, seq, window, microbatches);
    case SupernetMode::Sequential: return std::make_unique<CspDriver>(stages, seq, 1, microbatches);
    case SupernetMode::GPipe: return std::make_unique<FlushDriver>(p, n, microbatches, false, false);
    case SupernetMode::VPipe: return std::make_unique<FlushDriver>(p, n, microbatches, true, true);
    case SupernetMode::PipeDream: return std::make_unique<PipeDreamDriver>(p, n);
  }
  throw std::invalid_argument("unknown supernet mode");
}

}  // namespace pw::nas
