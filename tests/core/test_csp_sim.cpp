#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/nas/search_space_names.h"
#include "core/nas/supernet_partition.h"
#include "core/spec/spec_error.h"
#include "test_csp_helpers.h"

using namespace pw::nas;
using pw::JobSpec;

namespace {
SupernetSimResult run(const NasJob& nj, SupernetMode mode, bool comm = false,
                      std::vector<pw::Event>* events = nullptr) {
  auto in = supernet_sim_input(nj, mode);
  in.communication = comm;
  csptest::Recorder rec;
  auto r = simulate_supernet(in, &rec);
  if (events) *events = rec.events;
  return r;
}

JobSpec et_job(int stages, int replication, int subnets, const std::string& schedule = "csp") {
  nlohmann::json doc = {
      {"name", "et"},
      {"model",
       {{"kind", "transformer"}, {"encoder_layers", 24}, {"decoder_layers", 24}, {"hidden", 1024}, {"heads", 16},
        {"seq_len", 128}, {"vocab", 32000}, {"precision", "fp16"}}},
      {"search_space", {{"builtin", "evolved-transformer"}, {"replication", replication}}},
      {"training", {{"optimizer", "sgd"}, {"batch_size", 32}, {"microbatch_size", 32}, {"iterations", subnets}, {"seed", 1}}},
      {"cluster", {{"devices", stages}, {"device", "rtx2080ti"}}},
      {"pipeline", {{"stages", stages}, {"schedule", schedule}}}};
  return pw::parse_job(doc);
}
}  // namespace

TEST(CspSim, OneSubnetAtATimeIsOneOverStages) {
  // Unit time, 4 stages, no transfers: a subnet takes 4 forward + 4
  // backward units end to end and nothing overlaps, so each stage is busy
  // 2 of every 8 units.
  NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 1000, 50));
  auto r = run(nj, SupernetMode::Sequential);
  EXPECT_NEAR(r.makespan_ms, 50 * 2 * 8.0, 1e-6);  // 2 layers x (1 + 1) ms per stage
  EXPECT_NEAR(r.utilisation, 0.25, 1e-9);
  // One choice per layer: every subnet conflicts with its predecessor
  // everywhere, so CSP degenerates to exactly the sequential schedule.
  NasJob one = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 1, 50));
  EXPECT_NEAR(run(one, SupernetMode::Csp).utilisation, 0.25, 1e-9);
}

TEST(CspSim, MoreChoicesPushUtilisationTowardsOne) {
  std::vector<double> util;
  for (int choices : {1, 2, 4, 16, 256, 100000}) {
    NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, choices, 400));
    util.push_back(run(nj, SupernetMode::Csp).utilisation);
  }
  for (size_t i = 1; i < util.size(); ++i) EXPECT_GE(util[i] + 1e-9, util[i - 1]) << i;
  EXPECT_GT(util[1], 0.26);
  EXPECT_GT(util[3], 0.5);
  // No conflicts at all: the steady state is full; only fill and drain
  // (2 x (p - 1) units of 2 per subnet-stage over 400 subnets) remain.
  double ideal = 400.0 * 2 * 2 / (400.0 * 2 * 2 + 2 * 3 * 2);
  EXPECT_GT(util.back(), 0.97 * ideal);
}

TEST(CspSim, EverySharedLayerSeesUpdatesInSequenceOrder) {
  for (int choices : {2, 3, 8}) {
    NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, choices, 200, 16));
    std::vector<pw::Event> events;
    auto r = run(nj, SupernetMode::Csp, true, &events);
    EXPECT_EQ(r.subnets, 200);
    EXPECT_TRUE(r.reproducible);
    EXPECT_EQ(csptest::causal_violations(events, nj.sequence, nj.stages), 0) << choices;
    EXPECT_GT(r.utilisation, 0.25 + 0.01) << "CSP overlapped nothing at " << choices << " choices";
  }
}

TEST(CspSim, TheCheckerCatchesPipeDreamRacingOnSharedLayers) {
  NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 2, 100));
  std::vector<pw::Event> events;
  auto r = run(nj, SupernetMode::PipeDream, true, &events);
  EXPECT_FALSE(r.reproducible);
  EXPECT_GT(csptest::causal_violations(events, nj.sequence, nj.stages), 0);
  for (auto mode : {SupernetMode::GPipe, SupernetMode::VPipe, SupernetMode::Sequential}) {
    run(nj, mode, true, &events);
    EXPECT_EQ(csptest::causal_violations(events, nj.sequence, nj.stages), 0) << to_string(mode);
  }
}

TEST(CspSim, WaitEdgesAreRealConflicts) {
  NasJob nj = prepare_nas_job(csptest::uniform_supernet_job(4, 8, 3, 120));
  struct Obs : SubnetObserver {
    std::vector<SubnetWait> edges;
    int done = 0;
    void on_wait(const SubnetWait& w) override { edges.push_back(w); }
    void on_state(int, SubnetState s, int, std::int64_t) override { done += s == SubnetState::Done; }
  } obs;
  simulate_supernet(supernet_sim_input(nj, SupernetMode::Csp), nullptr, &obs);
  EXPECT_EQ(obs.done, 120);
  ASSERT_FALSE(obs.edges.empty());
  for (const auto& e : obs.edges) {
    EXPECT_LT(e.waited_for, e.waiter);
    EXPECT_GE(e.layer, nj.stages[e.stage].first);
    EXPECT_LE(e.layer, nj.stages[e.stage].last);
    EXPECT_EQ(nj.sequence[e.waiter][e.layer], nj.sequence[e.waited_for][e.layer]);
  }
}

TEST(CspSim, PredictivePrefetchFindsLayersResident) {
  // 3 GiB per stage: about ten subnets' candidates (~270 MiB each), a
  // tenth of the stage's share of the 96-choice supernet.
  JobSpec job = et_job(4, 4, 120);
  job.search_space["device_budget_gb"] = 3.0;
  NasJob nj = prepare_nas_job(job);
  auto csp = run(nj, SupernetMode::Csp, true);
  auto gpipe = run(nj, SupernetMode::GPipe, true);
  EXPECT_GT(csp.hit_rate(), 0.75);
  EXPECT_GT(csp.hit_rate(), gpipe.hit_rate() + 0.4);
  EXPECT_LT(csp.load_stall_ms, gpipe.load_stall_ms);
  for (auto peak : csp.peak_resident_bytes) EXPECT_LE(peak, 3.0 * (1 << 30));
}

TEST(CspSim, CspBeatsEveryReproducibleBaselineOnTheLargestEtSpace) {
  // PipeDream is faster but races on shared candidates (see above).
  NasJob nj = prepare_nas_job(et_job(8, 4, 200));
  double csp = run(nj, SupernetMode::Csp, true).subnets_per_s;
  for (auto mode : {SupernetMode::Sequential, SupernetMode::GPipe, SupernetMode::VPipe})
    EXPECT_GT(csp, run(nj, mode, true).subnets_per_s) << to_string(mode);
}

TEST(SearchSpace, EvolvedTransformerSizes) {
  for (int r : {1, 2, 3, 4}) {
    SearchSpace sp = parse_search_space(et_job(4, r, 10));
    ASSERT_EQ(sp.size(), 48);
    EXPECT_EQ(sp.layers[0].choices(), 24 * r);
    EXPECT_EQ(sp.layers[47].choices(), 25 * r);
    EXPECT_TRUE(sp.has_stem && sp.has_head);
  }
  SearchSpace sp = parse_search_space(et_job(4, 1, 10));
  // Standard conv k=5 at hidden 1024: 5 h^2 + h parameters, 2 bytes each
  // in fp16; forward 2 x tokens x 5 h^2 FLOPs.
  const auto& conv5 = sp.layers[0].candidates[2];
  EXPECT_EQ(conv5.label(), "conv k5");
  EXPECT_EQ(conv5.cost.param_bytes, static_cast<std::uint64_t>((5.0 * 1024 * 1024 + 1024) * 2));
  const pw::DeviceSpec d = *pw::device_preset("rtx2080ti");
  // At full efficiency, plus the preset's fixed part per microbatch of 32:
  // small_batch_penalty x one sample's time and one dispatch.
  const double full = 2.0 * 32 * 128 * 5 * 1024 * 1024 / (d.tflops * 1e12) * 1e3;
  EXPECT_NEAR(conv5.cost.fwd_ms, full + d.small_batch_penalty * full / 32 + d.layer_dispatch_us * 1e-3, 1e-9);
}

TEST(SearchSpace, ErrorsNameTheJsonPath) {
  auto expect_path = [](nlohmann::json space, const std::string& path, std::string model = "cnn") {
    nlohmann::json doc = {{"name", "x"},
                          {"cluster", {{"device", "v100-32g"}}},
                          {"model", model == "cnn" ? nlohmann::json{{"kind", "cnn"}, {"channels", {8}}}
                                                   : nlohmann::json{{"kind", "uniform"}, {"layers", 4}, {"fwd_ms", 1}, {"bwd_ms", 1}, {"activation_mb", 0}}},
                          {"search_space", space}};
    try {
      parse_search_space(pw::parse_job(doc));
      ADD_FAILURE() << "accepted " << space.dump();
    } catch (const pw::SpecError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  expect_path({{"builtin", "fmnist-cnn"}, {"kernels", {3, 4}}}, "search_space.kernels[1]");
  expect_path({{"builtin", "fmnist-cnn"}, {"kernal", {3}}}, "search_space.kernal");
  expect_path({{"builtin", "evolved-transformer"}}, "model.kind");
  expect_path({{"builtin", "nope"}}, "search_space.builtin");
  expect_path({{"layers", {{{"candidates", {{{"op", "uniform"}, {"fwd_ms", -1}}}}}}}}, "search_space.layers[0].candidates[0].fwd_ms", "uniform");
  expect_path({{"builtin", "uniform"}, {"window", 0}}, "search_space.window", "uniform");
  expect_path({{"builtin", "uniform"}, {"sampler", "list"}}, "search_space.subnet_file", "uniform");
}

TEST(SearchSpace, ExportedNamesAreWhatTheParserAccepts) {
  // The studio offers these names; each must parse, and a name outside
  // them must not.
  const auto& n = search_space_names();
  auto parses = [](nlohmann::json space) {
    nlohmann::json doc = {{"name", "x"},
                          {"cluster", {{"device", "v100-32g"}}},
                          {"model", {{"kind", "transformer"}, {"encoder_layers", 2}, {"decoder_layers", 0}, {"hidden", 64},
                                     {"heads", 4}, {"seq_len", 16}}},
                          {"search_space", space}};
    try {
      parse_search_space(pw::parse_job(doc));
      return true;
    } catch (const pw::SpecError&) {
      return false;
    }
  };
  auto custom = [](const std::string& op) {
    return nlohmann::json{{"layers", {{{"candidates", {{{"op", op}}}}}}}};
  };
  for (const auto& op : n.ops) EXPECT_TRUE(parses(custom(op))) << op;
  EXPECT_FALSE(parses(custom("conv2d")));
  EXPECT_TRUE(parses({{"builtin", "evolved-transformer"}}));
  EXPECT_NE(std::find(n.builtins.begin(), n.builtins.end(), "evolved-transformer"), n.builtins.end());
  for (const auto& b : n.builtins) EXPECT_NE(b, "custom");
  EXPECT_FALSE(parses({{"builtin", "custom"}}));
  for (const auto& p : n.partitions) EXPECT_TRUE(parses({{"builtin", "evolved-transformer"}, {"partition", p}})) << p;
  for (const auto& s : n.shared) EXPECT_TRUE(parses({{"builtin", "evolved-transformer"}, {"shared", s}})) << s;
  for (const auto& s : n.samplers)
    EXPECT_TRUE(parses({{"builtin", "evolved-transformer"}, {"sampler", s}, {"subnet_file", "x.txt"}})) << s;
  EXPECT_EQ(n.partitions.front(), parse_search_space(pw::parse_job({{"name", "x"},
                                                                     {"cluster", {{"device", "v100-32g"}}},
                                                                     {"model", {{"kind", "transformer"}, {"encoder_layers", 2},
                                                                                {"decoder_layers", 0}, {"hidden", 64}, {"seq_len", 16}}},
                                                                     {"search_space", {{"builtin", "evolved-transformer"}}}}))
                                       .partition);
}

TEST(SearchSpace, FmnistCnnSpace) {
  nlohmann::json doc = {{"name", "f"}, {"cluster", {{"device", "v100-32g"}}},
                        {"model", {{"kind", "cnn"}, {"channels", {16}}, {"precision", "fp16"}}},
                        {"search_space", {{"builtin", "fmnist-cnn"}, {"choice_layers", 4}, {"widths", {16, 32}}}}};
  SearchSpace sp = parse_search_space(pw::parse_job(doc));
  ASSERT_EQ(sp.size(), 4);
  EXPECT_EQ(sp.layers[0].choices(), 3 * 2 + 1);  // kernels 3/5/7 x widths 16/32, identity
  EXPECT_EQ(sp.layers[0].candidates.back().op, "identity");
  EXPECT_EQ(sp.layers[0].candidates[0].cost.param_bytes, (9u * 16 * 16 + 16 + 16 * 16 + 16) * 2);
}

TEST(Sampler, DeterministicFromTheSeedAndInRange) {
  SearchSpace sp = parse_search_space(et_job(4, 4, 10));
  auto a = subnet_sequence(sp, 5, 100), b = subnet_sequence(sp, 5, 100), c = subnet_sequence(sp, 6, 100);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int> hist(96, 0);
  for (const auto& s : a)
    for (size_t l = 0; l < s.size(); ++l) {
      ASSERT_GE(s[l], 0);
      ASSERT_LT(s[l], sp.layers[l].choices());
      if (l < 24) ++hist[s[l]];
    }
  int used = 0;
  for (int h : hist) used += h > 0;
  EXPECT_GT(used, 90);  // 2400 draws over 96 choices touch nearly all
}

TEST(Sampler, SubnetListFileErrorsNameTheLine) {
  nlohmann::json doc = {{"name", "u"}, {"cluster", {{"device", "v100-32g"}}},
                        {"model", {{"kind", "uniform"}, {"layers", 3}, {"fwd_ms", 1}, {"bwd_ms", 1}, {"activation_mb", 0}}},
                        {"search_space", {{"builtin", "uniform"}, {"choice_layers", 3}, {"choices", 4}}}};
  SearchSpace sp = parse_search_space(pw::parse_job(doc));
  std::string file = ::testing::TempDir() + "/subnets.txt";
  {
    std::ofstream(file) << "# subnets\n0 1 2\n3,3,3\n\n1 2 9\n";
  }
  try {
    load_subnet_list(file, sp);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(":5: layer 2"), std::string::npos) << e.what();
  }
  {
    std::ofstream(file) << "0 1 2\n3,3,3\n";
  }
  auto list = load_subnet_list(file, sp);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1], (Subnet{3, 3, 3}));
}

TEST(Partition, BalancesExpectedCost) {
  NasJob nj = prepare_nas_job(et_job(4, 1, 10));
  ASSERT_EQ(nj.stages.size(), 4u);
  EXPECT_EQ(nj.stages[0].first, 0);
  EXPECT_EQ(nj.stages[3].last, 47);
  std::vector<double> t(4, 0);
  for (int s = 0; s < 4; ++s)
    for (int l = nj.stages[s].first; l <= nj.stages[s].last; ++l) t[s] += expected_layer_ms(nj.space.layers[l]);
  t[0] += nj.space.stem.fwd_ms + nj.space.stem.bwd_ms;
  t[3] += nj.space.head.fwd_ms + nj.space.head.bwd_ms;
  double mx = *std::max_element(t.begin(), t.end()), mn = *std::min_element(t.begin(), t.end());
  EXPECT_LT(mx / mn, 1.35);
}
