// Replicas of the pipeline (parallel.data): stages x replicas workers must
// train exactly what one process trains on the whole global batch in the
// same data order (the plain-libtorch reference loop), and a stage's
// replicas must hold bitwise the same weights (issue 39, "Equality").
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "core/events/event_json.h"
#include "core/plan/plan_order.h"
#include "core/spec/spec_error.h"
#include "reference_loop.h"
#include "run_helpers.h"
#include "runtime/layers.h"
#include "runtime/process_group.h"
#include "runtime/rendezvous.h"
#include "runtime/replica_agreement.h"

namespace pw::rt {
namespace {
using namespace testing;

constexpr int kReplicaIterations = 20;

// The demo CNN's layers (resources/jobs/demo-fmnist-cnn.json) on synthetic
// images, or the tiny GPT of test_language_models on the fortunes text.
nlohmann::json dp_job(const std::string& model, int stages, int replicas, const std::string& schedule) {
  nlohmann::json m, data, training;
  if (model == "cnn") {
    m = {{"kind", "cnn"}, {"image_size", 28}, {"in_channels", 1}, {"channels", {32, 64}}, {"classes", 10},
         {"precision", "fp32"}};
    data = {{"kind", "synthetic"}, {"samples", 512}};
    training = {{"optimizer", "adam"}, {"lr", 0.002}, {"batch_size", 16}, {"microbatch_size", 2}};
  } else {
    m = {{"kind", "gpt"}, {"layers", 1}, {"hidden", 32}, {"heads", 2}, {"seq_len", 16}, {"vocab", 256},
         {"ffn_mult", 2}, {"precision", "fp32"}};
    data = {{"kind", "text"}};
    training = {{"optimizer", "adam"}, {"lr", 0.003}, {"batch_size", 8}, {"microbatch_size", 1}};
  }
  training["iterations"] = kReplicaIterations;
  training["seed"] = 5;
  return {{"name", "dp-" + model},
          {"model", m},
          {"data", data},
          {"training", training},
          {"cluster", {{"devices", stages * replicas}, {"device", "custom"}, {"memory_gb", 1}, {"tflops", 0.05}}},
          {"pipeline", {{"stages", stages}, {"schedule", schedule}, {"planner", "uniform"},
                        {"chunks", schedule == "interleaved" || schedule == "zb-v" ? 2 : 1}}},
          {"parallel", {{"data", replicas}}}};
}

// Whether model parameter i is an attention's qkv bias (its key part has a
// gradient that is rounding noise, see the test).
bool key_bias(const JobSpec& job, size_t i) {
  size_t k = 0;
  for (auto& layer : build_layers(job))
    for (const auto& item : layer->named_parameters())
      if (k++ == i) return item.key().find("qkv.bias") != std::string::npos;
  return false;
}

// The same job as one pipeline of one process's worth: every microbatch of
// the global batch, in order.
JobSpec single_process_reference(nlohmann::json doc) {
  doc.erase("parallel");
  doc["cluster"]["devices"] = doc["pipeline"]["stages"];
  return parse_job(doc);
}

struct ReplicaCase {
  const char* model;
  int stages, replicas;
  const char* schedule;
};

// The run's final weights in model order: a device's file holds its layers'
// parameters in layer order, and with chunks (interleaved, V) a device holds
// layers apart, so each layer is taken from the device the schedule put it on.
std::vector<at::Tensor> weights_in_model_order(const std::string& dir, const JobSpec& job, const Plan& plan) {
  auto schedule = make_plan_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches,
                                     job.pipeline.chunks, plan);
  std::vector<std::vector<at::Tensor>> files;
  for (int d = 0; d < job.pipeline.stages; ++d)
    files.push_back(load_stage_parameters(dir + "/weights/stage" + std::to_string(d) + ".pt"));
  std::vector<size_t> next(files.size(), 0);
  std::vector<at::Tensor> out;
  auto layers = build_layers(job);
  for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
    const int d = schedule->device_of_virtual_stage(plan.stage_of(l));
    for (size_t k = 0; k < layers[l]->parameters().size(); ++k) out.push_back(files.at(d).at(next[d]++));
  }
  return out;
}

// Trains `doc` (stages x replicas workers) and compares it with the single
// process loop over the global batch; the replicas' hashes and event files too.
void expect_single_process_result(const nlohmann::json& doc, ReplicaCase c) {
  std::string dir = temp_dir("dp");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  const JobSpec ref_job = single_process_reference(doc);
  ASSERT_EQ(ref_job.pipeline.microbatches, parse_job(doc).pipeline.microbatches * c.replicas);
  auto w = weights_in_model_order(dir, parse_job(doc), run.plan);
  // Against the loop over the global batch in plain order, and against the
  // same loop summing each replica's share first (DDP's order; reference_loop.h).
  for (int shares : {1, c.replicas}) {
    Reference ref = reference_loop(ref_job, {}, c10::kCPU, shares);
    // The loss reported is the global batch's (the replicas' mean).
    ASSERT_EQ(run.losses.size(), ref.losses.size());
    for (size_t i = 0; i < ref.losses.size(); ++i)
      EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
    ASSERT_EQ(w.size(), ref.weights.size());
    for (size_t i = 0; i < w.size(); ++i) {
      // In plain order, an attention key bias (its gradient 0 analytically,
      // rounding noise numerically, which Adam scales to steps of up to lr)
      // follows the summation order, not the data: its key third alone is left out there.
      at::Tensor got = w[i], want = ref.weights[i];
      if (shares == 1 && key_bias(ref_job, i)) {
        const std::int64_t h = got.size(0) / 3;  // [q | k | v]: q and v compared
        got = at::cat({got.narrow(0, 0, h), got.narrow(0, 2 * h, h)});
        want = at::cat({want.narrow(0, 0, h), want.narrow(0, 2 * h, h)});
      }
      double scale = want.abs().max().item<double>();
      EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * scale)
          << "parameter " << i << ", reference in " << shares << " share(s)";
    }
  }
  // Trained, not equal-but-untouched.
  auto init = build_layers(ref_job);
  EXPECT_GT((w[0] - init[0]->parameters()[0]).abs().max().item<double>(), 1e-4);

  // Replicas bitwise equal: each worker's FNV-1a over its parameter bytes.
  ASSERT_EQ(run.stages.size(), static_cast<size_t>(c.stages * c.replicas));
  std::map<int, std::string> hash_of_stage;
  for (const auto& s : run.stages) {
    const int stage = s.at("stage").get<int>();
    const std::string h = s.at("weights_fnv1a").get<std::string>();
    EXPECT_EQ(s.at("rank").get<int>(), stage * c.replicas + s.at("replica").get<int>());
    auto [it, fresh] = hash_of_stage.emplace(stage, h);
    EXPECT_EQ(it->second, h) << "stage " << stage << " replica " << s.at("replica");
  }

  // Every worker recorded its all-reduce buckets, stamped with its replica.
  for (int s = 0; s < c.stages; ++s)
    for (int r = 0; r < c.replicas; ++r) {
      std::string file = dir + "/events/stage" + std::to_string(s) + (r ? ".replica" + std::to_string(r) : "") + ".jsonl";
      std::ifstream in(file);
      ASSERT_TRUE(in) << file;
      int allreduces = 0, events = 0;
      for (std::string line; std::getline(in, line);) {
        auto e = event_from_json_line(line);
        if (!e) continue;
        ++events;
        EXPECT_EQ(e->replica, r) << file;
        EXPECT_EQ(e->stage, s) << file;
        if (e->kind == EventKind::AllReduce) {
          ++allreduces;
          EXPECT_GT(e->bytes, 0);
          EXPECT_LE(e->start_ns, e->end_ns);
        }
      }
      EXPECT_GT(events, 0) << file;
      EXPECT_GE(allreduces, kReplicaIterations) << file;  // at least one bucket per iteration
    }
  std::filesystem::remove_all(dir);
}

class DataParallel : public ::testing::TestWithParam<ReplicaCase> {};

TEST_P(DataParallel, ReplicasTrainWhatOneProcessTrainsOnTheGlobalBatch) {
  const ReplicaCase c = GetParam();
  expect_single_process_result(dp_job(c.model, c.stages, c.replicas, c.schedule), c);
}

// Clipping looks at the replicas' mean gradient (the global batch's), as the
// single process clips its own; a clip this tight changes every step.
TEST(DataParallel, ClippingActsOnTheMeanGradient) {
  auto doc = dp_job("cnn", 2, 2, "1f1b");
  doc["training"]["clip_grad_norm"] = 0.05;
  expect_single_process_result(doc, ReplicaCase{"cnn", 2, 2, "1f1b"});
  auto unclipped = single_process_reference(dp_job("cnn", 2, 2, "1f1b"));
  EXPECT_NE(reference_loop(single_process_reference(doc)).losses.back(), reference_loop(unclipped).losses.back());
}

INSTANTIATE_TEST_SUITE_P(Runtime, DataParallel,
                         ::testing::Values(ReplicaCase{"cnn", 1, 2, "1f1b"}, ReplicaCase{"cnn", 2, 2, "1f1b"},
                                           ReplicaCase{"cnn", 2, 2, "gpipe"}, ReplicaCase{"cnn", 2, 2, "zb-h1"},
                                           ReplicaCase{"gpt", 1, 2, "1f1b"}, ReplicaCase{"gpt", 2, 2, "1f1b"},
                                           ReplicaCase{"gpt", 2, 2, "zb-h1"}, ReplicaCase{"cnn", 1, 2, "zb-h1"},
                                           ReplicaCase{"gpt", 2, 2, "zb-v"}, ReplicaCase{"gpt", 2, 2, "interleaved"}),
                         [](const auto& info) {
                           std::string s = info.param.schedule;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return std::string(info.param.model) + "_" + std::to_string(info.param.stages) + "x" +
                                  std::to_string(info.param.replicas) + "_" + s;
                         });

// PipeDream's async schedule and live migration with replicas:
// tests/runtime/test_replica_migration.cpp.

// Replica 0 of each stage writes the checkpoint, every replica loads it: a
// resumed 2 x 2 run ends bitwise where the uninterrupted one did.
TEST(DataParallel, ResumeFromACheckpointGivesBitwiseTheSameWeights) {
  auto doc = mlp_job(2, 2, "1f1b", {32, 32, 32}, 5);
  doc["training"]["batch_size"] = 16;  // 2 replicas x 2 microbatches of 4
  doc["cluster"]["devices"] = 4;
  doc["parallel"] = {{"data", 2}};
  expect_bitwise_resume(doc, "dp-ckpt", [](const std::string& dir) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint/3/stage1.pt"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint/3/stage2.pt"));  // one file per stage, not per worker
  });
}

// The weight check itself: two replicas (threads over one in-process store)
// agree when their parameters are bitwise equal, and a single differing bit
// fails naming the stage, both replicas and the iteration.
TEST(DataParallel, ReplicasWhoseWeightsDifferFailNamingStageAndReplicas) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto check = [&](const std::string& prefix, bool flip_one_bit) {
    std::vector<std::string> errors(2);
    std::vector<std::thread> replicas;
    for (int r = 0; r < 2; ++r)
      replicas.emplace_back([&, r] {
        ReplicaSet set;
        set.group = make_gloo_group(store, r, 2, {.prefix = prefix, .timeout = std::chrono::seconds(60), .threads = 1,
                                                  .device = nullptr});
        set.index = r;
        set.count = 2;
        std::vector<at::Tensor> params{at::arange(12, at::kFloat).reshape({3, 4}), at::ones({5})};
        if (flip_one_bit && r == 1) params[1][2].fill_(std::nextafter(1.0f, 2.0f));  // one ulp
        try {
          check_replicas_agree(set, StageDevice{}, WorkerRole{3, r, 2}, params, 40);
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    for (auto& t : replicas) t.join();
    return errors;
  };
  for (const auto& e : check("equal", false)) EXPECT_EQ(e, "");
  for (const auto& e : check("differ", true)) {
    EXPECT_NE(e.find("stage 3: replicas 0 and 1 hold different weights after iteration 40"), std::string::npos) << e;
  }
}

// Online replanning (runtime.replan) with replicas: every worker reports its
// iteration, the controller hears the whole world (a key missing from one
// replica would stall it), and the run ends with the replicas still one
// model. (Moving layers: tests/runtime/test_replica_migration.cpp.)
TEST(DataParallel, OnlineReplanningRunsWithReplicas) {
  auto doc = dp_job("cnn", 2, 2, "1f1b");
  doc["training"]["iterations"] = 6;
  doc["runtime"] = {{"replan", {{"enabled", true}}}};
  std::string dir = temp_dir("dp-replan");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  EXPECT_EQ(run.losses.size(), 6u);
  std::ifstream in(dir + "/migration.json");
  ASSERT_TRUE(in);
  auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["timeline"].size(), 6u);  // every iteration heard from all four workers
  for (const auto& t : report["timeline"]) EXPECT_EQ(t["compute_ms"].size(), 2u);  // per stage
  std::map<int, std::string> hash_of_stage;
  for (const auto& s : run.stages) {
    auto [it, fresh] = hash_of_stage.emplace(s.at("stage").get<int>(), s.at("weights_fnv1a").get<std::string>());
    EXPECT_EQ(it->second, s.at("weights_fnv1a").get<std::string>());
  }
  std::filesystem::remove_all(dir);
}

// The worker process with WORLD rank `rank` among this test's children
// (its environment says), or 0.
pid_t child_with_rank(int rank) {
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    int ppid = 0;
    char state = 0;
    if (close == std::string::npos || sscanf(line.c_str() + close + 2, "%c %d", &state, &ppid) != 2 ||
        ppid != getpid() || state == 'Z')
      continue;
    std::ifstream env(e.path() / "environ");
    bool match = false;
    for (std::string var; std::getline(env, var, '\0');) match = match || var == "RANK=" + std::to_string(rank);
    if (match)
      return std::stoi(name);
  }
  return 0;
}

// A dead replica worker fails the run naming its stage, its replica and the signal.
TEST(DataParallel, ADeadReplicaWorkerIsNamedByStageReplicaAndSignal) {
  auto doc = mlp_job(2, 2, "1f1b", {64, 64, 64}, 1000000);
  doc["training"]["batch_size"] = 16;  // 2 replicas x 2 microbatches of 4
  doc["cluster"]["devices"] = 4;
  doc["parallel"] = {{"data", 2}};
  std::string dir = temp_dir("dp-kill");
  auto fut = std::async(std::launch::async, [&] { return run_job(options(doc, dir)); });
  pid_t victim = 0;  // WORLD rank 1 = stage 0, replica 1
  for (int i = 0; i < 200 && !victim; ++i) {
    victim = child_with_rank(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(victim, 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // training is under way
  kill(victim, SIGKILL);
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  RunResult r = fut.get();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.error.find("stage 0 replica 1 worker killed by signal 9"), std::string::npos) << r.error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::rt
