#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/nas/csp_policy.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

namespace {

// Drives CspStage objects for `p` stages with an adversarial, randomised
// asynchronous executor: at every step it either delivers one in-transit
// message or lets a random stage start its next action, and actions finish
// in random order. No clock: only the policy's decisions order anything.
// Returns the number of subnets finished; checks the CSP invariant at every
// forward start independently of the policy.
struct RandomExecutor {
  int p;
  const std::vector<Subnet>& seq;
  std::vector<StageSlots> slots;
  std::vector<CspStage> csp;
  std::mt19937 rng;
  std::vector<std::vector<bool>> done;  // [stage][subnet] backward + update done
  int invariant_failures = 0;

  RandomExecutor(int stages, const std::vector<Subnet>& s, int window, unsigned seed) : p(stages), seq(s), rng(seed) {
    int layers = static_cast<int>(s[0].size());
    for (int i = 0; i < p; ++i) slots.push_back({i * layers / p, (i + 1) * layers / p - 1});
    for (int i = 0; i < p; ++i) csp.emplace_back(i, p, slots[i], &seq, window);
    done.assign(p, std::vector<bool>(seq.size(), false));
  }

  bool shares(int w, int b, int s) const {
    for (int l = slots[s].first; l <= slots[s].last; ++l)
      if (seq[w][l] == seq[b][l]) return true;
    return false;
  }

  int run() {
    struct Msg { int stage; int subnet; bool backward; };
    struct Running { int stage; int subnet; bool backward; };
    std::vector<Msg> transit;
    std::vector<Running> running;
    std::vector<bool> busy(p, false);
    for (int steps = 0; steps < 10'000'000; ++steps) {
      std::vector<int> choices;  // 0: deliver, 1: finish, 2: start on a stage
      if (!transit.empty()) choices.push_back(0);
      if (!running.empty()) choices.push_back(1);
      std::vector<int> startable;
      for (int s = 0; s < p; ++s)
        if (!busy[s] && csp[s].next()) startable.push_back(s);
      if (!startable.empty()) choices.push_back(2);
      if (choices.empty()) break;
      int c = choices[rng() % choices.size()];
      if (c == 0) {
        size_t i = rng() % transit.size();
        Msg m = transit[i];
        transit.erase(transit.begin() + i);
        if (m.backward) csp[m.stage].backward_ready(m.subnet);
        else csp[m.stage].forward_ready(m.subnet);
      } else if (c == 1) {
        size_t i = rng() % running.size();
        Running r = running[i];
        running.erase(running.begin() + i);
        busy[r.stage] = false;
        if (!r.backward) {
          if (r.stage + 1 < p) transit.push_back({r.stage + 1, r.subnet, false});
          else csp[r.stage].backward_ready(r.subnet);
        } else {
          if (r.stage > 0) transit.push_back({r.stage - 1, r.subnet, true});
          done[r.stage][r.subnet] = true;
          csp[r.stage].backward_done(r.subnet);
        }
      } else {
        int s = startable[rng() % startable.size()];
        auto a = *csp[s].next();
        bool bwd = a.kind == CspActionKind::Backward;
        if (!bwd) {
          for (int w = 0; w < a.subnet; ++w)
            if (!done[s][w] && shares(w, a.subnet, s)) ++invariant_failures;
          csp[s].forward_started(a.subnet);
        } else {
          csp[s].backward_started(a.subnet);
        }
        busy[s] = true;
        running.push_back({s, a.subnet, bwd});
      }
    }
    return csp[0].finished_count();
  }
};

std::vector<Subnet> identical(int n, int layers) { return std::vector<Subnet>(n, Subnet(layers, 0)); }

std::vector<Subnet> alternating(int n, int layers) {
  // Neighbours differ everywhere, every other subnet is the same: each
  // subnet conflicts with the one two places earlier at every stage.
  std::vector<Subnet> out;
  for (int i = 0; i < n; ++i) out.push_back(Subnet(layers, i % 2));
  return out;
}

std::vector<Subnet> full_window_blocked(int n, int layers, int window) {
  // Subnet 0 and every later one share the last layer (last stage), nothing
  // else: the whole window piles up behind subnet 0 at the last stage.
  std::vector<Subnet> out;
  for (int i = 0; i < n; ++i) {
    Subnet s(layers);
    for (int l = 0; l < layers; ++l) s[l] = 1 + (i % 50);
    s[layers - 1] = 0;
    out.push_back(s);
  }
  return out;
}

std::vector<Subnet> random_seq(int n, int layers, int choices, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Subnet> out(n, Subnet(layers));
  for (auto& s : out)
    for (auto& c : s) c = static_cast<int>(rng() % choices);
  return out;
}
}  // namespace

TEST(CspPolicy, ConflictsOnlyWithinTheStagesLayers) {
  std::vector<Subnet> seq = {{0, 0, 0, 0}, {1, 1, 0, 1}, {1, 0, 1, 1}};
  CspStage s0(0, 2, {0, 1}, &seq, 8), s1(1, 2, {2, 3}, &seq, 8);
  int layer = -1;
  EXPECT_FALSE(s0.conflicts(0, 1));
  EXPECT_TRUE(s0.conflicts(0, 2, &layer));
  EXPECT_EQ(layer, 1);
  EXPECT_TRUE(s1.conflicts(0, 1, &layer));
  EXPECT_EQ(layer, 2);
  EXPECT_TRUE(s1.conflicts(1, 2, &layer));
  EXPECT_EQ(layer, 3);
}

TEST(CspPolicy, EarlierSubnetThatHasNotArrivedStillBlocks) {
  std::vector<Subnet> seq = {{0, 0}, {1, 0}};
  CspStage s1(1, 2, {1, 1}, &seq, 8);
  s1.forward_ready(1);  // subnet 1 overtook subnet 0 upstream
  EXPECT_FALSE(s1.next().has_value());
  auto w = s1.blocker(1);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->waited_for, 0);
  EXPECT_EQ(w->layer, 1);
  s1.forward_ready(0);
  auto a = s1.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->subnet, 0);
  s1.forward_started(0);
  s1.backward_ready(0);
  EXPECT_EQ(s1.next()->kind, CspActionKind::Backward);
  s1.backward_started(0);
  EXPECT_FALSE(s1.next().has_value());  // 0's update not done yet
  s1.backward_done(0);
  EXPECT_EQ(s1.next()->subnet, 1);
}

TEST(CspPolicy, NonConflictingLaterSubnetOvertakes) {
  std::vector<Subnet> seq = {{0, 0}, {1, 0}, {1, 1}};
  CspStage s1(1, 2, {1, 1}, &seq, 8);
  s1.forward_ready(1);
  s1.forward_ready(2);
  auto a = s1.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->subnet, 2);  // 1 waits for 0 (layer 1, choice 0); 2 uses choice 1
}

TEST(CspPolicy, StageZeroAdmitsWithinTheWindow) {
  std::vector<Subnet> seq = random_seq(10, 4, 1000, 1);
  CspStage s0(0, 2, {0, 1}, &seq, 3);
  for (int b = 0; b < 3; ++b) {
    auto a = s0.next();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->subnet, b);
    s0.forward_started(b);
  }
  EXPECT_FALSE(s0.next().has_value());  // 0, 1, 2 in flight: window full
  s0.backward_done(1);
  EXPECT_FALSE(s0.next().has_value());  // window counts from the oldest unfinished (0)
  s0.backward_done(0);
  EXPECT_EQ(s0.next()->subnet, 3);
  EXPECT_EQ(s0.oldest_unfinished(), 2);
}

// A checkpoint's drain (hold_from) and a resumed stage (start_at): stage 0
// admits nothing at or past the hold while the window still has room, and
// a resumed stage runs on from k as if subnets < k had finished.
TEST(CspPolicy, HoldDrainsStageZeroAndStartAtResumes) {
  std::vector<Subnet> seq = random_seq(10, 4, 1000, 1);
  CspStage s0(0, 2, {0, 1}, &seq, 8);
  s0.hold_from(2);
  for (int b = 0; b < 2; ++b) {
    ASSERT_EQ(s0.next()->subnet, b);
    s0.forward_started(b);
  }
  EXPECT_FALSE(s0.next().has_value());  // window room for 6 more, but 2 is held back
  s0.backward_done(0);
  s0.backward_done(1);
  EXPECT_EQ(s0.oldest_unfinished(), 2);  // drained: every stage's state is that of subnets 0 and 1
  EXPECT_FALSE(s0.next().has_value());
  s0.hold_from(1 << 30);
  EXPECT_EQ(s0.next()->subnet, 2);

  CspStage r0(0, 2, {0, 1}, &seq, 3), r1(1, 2, {2, 3}, &seq, 3);
  r0.start_at(6);
  r1.start_at(6);
  EXPECT_TRUE(r0.finished(5));
  EXPECT_EQ(r0.finished_count(), 6);
  EXPECT_EQ(r0.next()->subnet, 6);  // nothing below 6 again, and no earlier subnet blocks
  r1.forward_ready(6);
  EXPECT_FALSE(r1.blocker(6).has_value());
  EXPECT_THROW(r0.start_at(7), std::logic_error);  // only before the stage starts
  CspStage r2(0, 2, {0, 1}, &seq, 3);
  EXPECT_THROW(r2.start_at(11), std::invalid_argument);
  r2.start_at(10);
  EXPECT_TRUE(r2.all_done());
}

struct Adversary {
  const char* name;
  std::vector<Subnet> seq;
};

TEST(CspDeadlock, AdversarialSequencesFinishUnderRandomAsynchrony) {
  const int layers = 8, n = 60;
  std::vector<Adversary> cases = {{"identical", identical(n, layers)},
                                  {"alternating", alternating(n, layers)},
                                  {"full-window-blocked", full_window_blocked(n, layers, 8)},
                                  {"random-2", random_seq(n, layers, 2, 3)},
                                  {"random-8", random_seq(n, layers, 8, 4)}};
  for (const auto& c : cases)
    for (int p : {1, 2, 4})
      for (int window : {1, 3, 8, 64})
        for (unsigned seed = 0; seed < 3; ++seed) {
          RandomExecutor ex(p, c.seq, window, seed);
          EXPECT_EQ(ex.run(), n) << c.name << " p=" << p << " window=" << window << " seed=" << seed;
          EXPECT_EQ(ex.invariant_failures, 0) << c.name;
        }
}

TEST(CspDeadlock, FullWindowOfBlockedSubnetsInTheSimulator) {
  // Window 6: subnet 0's gradient is back at stage 0 at t = 14 (unit
  // layers, two per stage), when stage 0 has admitted 7 subnets; there the
  // ready backward goes first, so a window of 8 would never fill.
  auto job = csptest::uniform_supernet_job(4, 8, 64, 40, 6);
  NasJob nj = prepare_nas_job(job);
  nj.sequence = full_window_blocked(40, 8, 6);
  csptest::Recorder rec;
  struct Waits : SubnetObserver {
    std::set<int> waiters_at_last;
    void on_wait(const SubnetWait& w) override {
      if (w.stage == 3 && w.waited_for == w.waiter - 1 && w.layer == 7) waiters_at_last.insert(w.waiter);
    }
  } obs;
  auto r = simulate_supernet(supernet_sim_input(nj, SupernetMode::Csp), &rec, &obs);
  EXPECT_EQ(r.subnets, 40);
  EXPECT_EQ(r.max_in_flight, 6);  // the window is full ...
  EXPECT_EQ(obs.waiters_at_last.size(), 39u);  // ... and everyone queues at the shared last layer
  EXPECT_EQ(csptest::causal_violations(rec.events, nj.sequence, nj.stages), 0);
}
