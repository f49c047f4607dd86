// NAS: the partition that may give the head a stage of its own (against
// brute force), CSP's simulated refinement, the CSP trainer's record stream
// (writer -> file -> tail -> observer) and the wait reporter.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "core/nas/subnet_log.h"
#include "core/nas/supernet_partition.h"
#include "test_csp_helpers.h"

using namespace pw::nas;

namespace {
pw::JobSpec et8(int replication, const std::string& partition = "balanced") {
  nlohmann::json doc = {
      {"name", "et"},
      {"model",
       {{"kind", "transformer"}, {"encoder_layers", 24}, {"decoder_layers", 24}, {"hidden", 1024}, {"heads", 16},
        {"seq_len", 128}, {"vocab", 32000}}},
      {"search_space", {{"builtin", "evolved-transformer"}, {"replication", replication}, {"partition", partition}}},
      {"training", {{"optimizer", "sgd"}, {"batch_size", 32}, {"microbatch_size", 4}, {"iterations", 120}, {"seed", 1}}},
      {"cluster", {{"devices", 8}, {"device", "rtx2080ti"}}},
      {"pipeline", {{"stages", 8}, {"schedule", "csp"}}}};
  return pw::parse_job(doc);
}

double stage_cost(const SearchSpace& sp, const StageSlots& r, bool first, bool last) {
  double t = 0;
  for (int l = r.first; l <= r.last; ++l) t += expected_layer_ms(sp.layers[l]);
  if (first) t += sp.stem.fwd_ms + sp.stem.bwd_ms;
  if (last) t += sp.head.fwd_ms + sp.head.bwd_ms;
  return t;
}

// Smallest possible largest-stage cost over every way to cut `n` layers
// into `p` contiguous stages, the last one possibly empty (brute force).
double brute_force_best(const SearchSpace& sp, int p) {
  const int n = sp.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts(p + 1, 0);
  cuts[p] = n;
  auto rec = [&](auto&& self, int s, int from) -> void {
    if (s == p) {
      double worst = 0;
      for (int k = 0; k < p; ++k)
        worst = std::max(worst, stage_cost(sp, {cuts[k], cuts[k + 1] - 1}, k == 0, k == p - 1));
      best = std::min(best, worst);
      return;
    }
    for (int c = from + 1; c <= n; ++c) {  // stage s - 1 is [from, c): non-empty
      if (s == p - 1 ? c > n : c > n - (p - 1 - s)) break;
      cuts[s] = c;
      self(self, s + 1, c);
    }
  };
  cuts[0] = 0;
  rec(rec, 1, 0);
  return best;
}
}  // namespace

TEST(NasPartition, TheHeadMayHaveTheLastStageAloneAndTheDpIsOptimal) {
  NasJob nj = prepare_nas_job(et8(1));
  ASSERT_EQ(nj.stages.size(), 8u);
  // The 32000-word head outweighs a stage of choice layers on 8 stages.
  EXPECT_EQ(nj.stages.back().size(), 0);
  EXPECT_EQ(nj.stages.back().first, 48);
  double worst = 0;
  for (size_t s = 0; s < 8; ++s) worst = std::max(worst, stage_cost(nj.space, nj.stages[s], s == 0, s == 7));
  // Brute force on a smaller space (12 choice layers, 5 stages).
  auto job = et8(1);
  job.search_space["partition"] = "balanced";
  nlohmann::json small = job.raw;
  small["model"]["encoder_layers"] = 6;
  small["model"]["decoder_layers"] = 6;
  small["pipeline"]["stages"] = 5;
  small["cluster"]["devices"] = 5;
  NasJob sj = prepare_nas_job(pw::parse_job(small));
  ASSERT_EQ(sj.stages.size(), 5u);
  double dp = 0;
  for (size_t s = 0; s < 5; ++s) dp = std::max(dp, stage_cost(sj.space, sj.stages[s], s == 0, s == 4));
  EXPECT_NEAR(dp, brute_force_best(sj.space, 5), 1e-9);
  // And forcing a choice layer beside the head is worse on 8 stages.
  auto forced = nj.stages;
  forced[6].last -= 1;
  forced[7].first -= 1;
  double forced_worst = 0;
  for (size_t s = 0; s < 8; ++s) forced_worst = std::max(forced_worst, stage_cost(nj.space, forced[s], s == 0, s == 7));
  EXPECT_LT(worst, forced_worst);
}

TEST(NasPartition, CspRefinementIsNeverSlowerOnItsProbe) {
  NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 16, 6, 150));
  auto in = supernet_sim_input(nj, SupernetMode::Csp);
  std::vector<Subnet> probe(nj.sequence.begin(), nj.sequence.begin() + 100);
  auto refined = refine_partition_for_csp(in, 100);
  ASSERT_EQ(refined.size(), nj.stages.size());
  EXPECT_EQ(refined.front().first, 0);
  EXPECT_EQ(refined.back().last, nj.space.size() - 1);
  for (size_t s = 1; s < refined.size(); ++s) EXPECT_EQ(refined[s].first, refined[s - 1].last + 1);
  in.sequence = &probe;
  double before = simulate_supernet(in).subnets_per_s;
  in.stages = refined;
  EXPECT_GE(simulate_supernet(in).subnets_per_s, before);
}

namespace {
struct Calls final : SubnetObserver, pw::EventSink {
  std::vector<std::string> log;
  void on_subnet(int id, const std::vector<int>& c, std::int64_t t) override {
    log.push_back("subnet " + std::to_string(id) + " " + to_string(c) + " @" + std::to_string(t));
  }
  void on_state(int id, SubnetState st, int stage, std::int64_t t) override {
    log.push_back("state " + std::to_string(id) + " " + to_string(st) + " s" + std::to_string(stage) + " @" +
                  std::to_string(t));
  }
  void on_wait(const SubnetWait& w) override {
    log.push_back("wait " + std::to_string(w.waiter) + "->" + std::to_string(w.waited_for) + " s" +
                  std::to_string(w.stage) + " l" + std::to_string(w.layer) + " @" + std::to_string(w.t_ns));
  }
  void on_event(const pw::Event& e) override {
    log.push_back(std::string("event ") + pw::to_string(e.kind) + " " + std::to_string(e.microbatch) + " " +
                  std::to_string(e.start_ns) + "-" + std::to_string(e.end_ns) + " l" + std::to_string(e.first_layer) +
                  ".." + std::to_string(e.last_layer));
  }
};
}  // namespace

TEST(NasRecordStream, WriterTailAndReplayAreLossless) {
  auto file = (std::filesystem::temp_directory_path() / ("pw-subnet-log-" + std::to_string(::getpid()))).string();
  std::ofstream out(file);
  SubnetLogWriter w(out);
  Calls direct;
  SubnetLogTail tail(file);
  Calls replayed;
  auto both = [&](auto&& f) {
    f(static_cast<SubnetObserver&>(w), static_cast<pw::EventSink&>(w));
    f(static_cast<SubnetObserver&>(direct), static_cast<pw::EventSink&>(direct));
  };
  both([](SubnetObserver& o, pw::EventSink&) { o.on_subnet(3, {1, 0, 2}, 10); });
  both([](SubnetObserver& o, pw::EventSink&) { o.on_state(3, SubnetState::Forward, 1, 20); });
  EXPECT_EQ(tail.poll(&replayed, &replayed), 2);  // while the writer goes on
  both([](SubnetObserver& o, pw::EventSink&) { o.on_wait(SubnetWait{4, 3, 1, 2, 30}); });
  both([](SubnetObserver&, pw::EventSink& k) {
    pw::Event e;
    e.kind = pw::EventKind::OptimizerStep;
    e.stage = 1;
    e.microbatch = 3;
    e.start_ns = 40;
    e.end_ns = 55;
    e.first_layer = 2;
    e.last_layer = 3;
    k.on_event(e);
  });
  both([](SubnetObserver& o, pw::EventSink&) { o.on_state(3, SubnetState::Done, 0, 60); });
  out << "{\"r\":\"state\",\"id\":1";  // half a line: not yet
  out.flush();
  EXPECT_EQ(tail.poll(&replayed, &replayed), 3);
  out << ",\"state\":\"sleeping\",\"stage\":0,\"t\":1}\nnot json\n";
  out.flush();
  EXPECT_EQ(tail.poll(&replayed, &replayed), 2);
  EXPECT_EQ(tail.malformed(), 2);  // an unknown state and a non-record
  EXPECT_EQ(replayed.log, direct.log);
  std::filesystem::remove(file);
}

TEST(NasRecordStream, WaitReporterReportsEachBlockerOnce) {
  Calls obs;
  WaitReporter r;
  std::vector<SubnetWait> waits = {{5, 2, 0, 1, 0}, {6, 2, 0, 0, 0}};
  EXPECT_EQ(r.report(waits, 100, &obs), 2);
  EXPECT_EQ(r.report(waits, 200, &obs), 0);  // asked again, nothing changed
  waits[0].waited_for = 4;                    // 2 finished; 5 now waits for 4
  EXPECT_EQ(r.report(waits, 300, &obs), 1);
  r.forget(6);
  EXPECT_EQ(r.report(waits, 400, &obs), 1);
  ASSERT_EQ(obs.log.size(), 8u);  // a Waiting state and an edge per report
  EXPECT_EQ(obs.log[0], "state 5 waiting s0 @100");
  EXPECT_EQ(obs.log[1], "wait 5->2 s0 l1 @100");
  EXPECT_EQ(obs.log[5], "wait 5->4 s0 l1 @300");
  EXPECT_EQ(obs.log[7], "wait 6->2 s0 l0 @400");
}
