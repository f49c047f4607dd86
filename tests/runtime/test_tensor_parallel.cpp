// Tensor parallelism (parallel.tensor, issue 40): a transformer block's
// shards over t ranks compute what the whole block computes (module level,
// threads over one in-process store), and stages x replicas x t workers
// train what one process trains with the unsplit model (the plain-libtorch
// reference loop), every weight gathered from its shards by this test's own
// reading of Megatron-LM's layout (the token embedding and the head split
// by vocabulary too: test_vocab_parallel.cpp has their own checks); the
// unsplit weights bitwise one on every tensor rank; models that cannot be
// split refused naming the field.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include "core/events/event_json.h"
#include "core/plan/plan_order.h"
#include "core/spec/spec_error.h"
#include "reference_loop.h"
#include "run_helpers.h"
#include "runtime/layers.h"
#include "runtime/process_group.h"
#include "runtime/tensor_parallel/tensor_layers.h"
#include "tensor_parallel_helpers.h"

namespace pw::rt {
namespace {
using namespace testing;

// A block's shards (forward and backward) against the whole block: the
// output and the input gradient on every rank, and each rank's parameter
// gradients against its own rows / columns of the whole block's.
void expect_shards_compute_the_block(int layer, int t, const std::string& kind = "gpt") {
  auto doc = tp_job(1, 1, t);
  doc["model"]["kind"] = kind;
  JobSpec job = parse_job(doc);
  torch::manual_seed(11);
  const at::Tensor x0 = torch::randn({2, 16, 32}), upstream = torch::randn({2, 16, 32});
  auto whole = build_layers(job)[layer];
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor y = whole->forward(x);
  y.backward(upstream);
  // Built here, one per rank: build_layers seeds torch's one global generator,
  // which threads building at once would share.
  std::vector<torch::nn::Sequential> fresh_layers;
  for (int k = 0; k < t; ++k) fresh_layers.push_back(build_layers(job)[layer]);
  on_tensor_ranks(t, "block" + std::to_string(layer) + "t" + std::to_string(t), [&](const TensorSet& set) {
    auto fresh = fresh_layers[set.index];
    auto shard = shard_layer(fresh, set);
    EXPECT_FALSE(shard.ptr() == fresh.ptr()) << "layer " << layer << " was not split";
    at::Tensor xs = x0.clone().requires_grad_(true);
    at::Tensor ys = shard->forward(xs);
    ys.backward(upstream);
    const std::string where = "layer " + std::to_string(layer) + " rank " + std::to_string(set.index);
    expect_close(ys, y, 1e-6, where + " output");
    expect_close(xs.grad(), x.grad(), 1e-6, where + " input gradient");
    auto w = whole->named_parameters(), s = shard->named_parameters();
    ASSERT_EQ(w.size(), s.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(s[i].key(), w[i].key());
      const std::string name = w[i].key();
      expect_close(s[i].value(), expected_shard(name, w[i].value().detach(), t, set.index), 0, where + " " + name);
      expect_close(s[i].value().grad(), expected_shard(name, w[i].value().grad(), t, set.index), 1e-5,
                   where + " gradient of " + name);
    }
  });
}

TEST(TensorParallel, AttentionShardsComputeTheWholeBlock) {
  expect_shards_compute_the_block(1, 2);
}
TEST(TensorParallel, FeedForwardShardsComputeTheWholeBlock) {
  expect_shards_compute_the_block(2, 2);
}
// BERT's blocks are the same modules without the causal mask.
TEST(TensorParallel, BertBlocksSplitToo) {
  expect_shards_compute_the_block(1, 2, "bert");
  expect_shards_compute_the_block(2, 2, "bert");
}
// One head per rank of a four-way split of a 4-head attention's FFN too.
TEST(TensorParallel, FourWaySplitComputesTheWholeBlocks) {
  auto doc = tp_job(1, 1, 4);
  doc["model"]["heads"] = 4;
  JobSpec job = parse_job(doc);
  for (int layer : {1, 2}) {
    torch::manual_seed(3);
    const at::Tensor x0 = torch::randn({2, 16, 32});
    auto whole = build_layers(job)[layer];
    at::Tensor want = whole->forward(x0);
    std::vector<torch::nn::Sequential> fresh;  // before the threads (build_layers seeds the global generator)
    for (int k = 0; k < 4; ++k) fresh.push_back(build_layers(job)[layer]);
    on_tensor_ranks(4, "four" + std::to_string(layer), [&](const TensorSet& set) {
      torch::NoGradGuard ng;  // the forward's all-reduce without autograd (a recompute's first pass)
      expect_close(shard_layer(fresh[set.index], set)->forward(x0), want, 1e-6, "4-way layer");
    });
  }
}

// ---- whole runs against the single-process loop ----

// The same model unsplit, one pipeline of one process's worth.
JobSpec single_process(nlohmann::json doc) {
  doc.erase("parallel");
  doc["cluster"]["devices"] = doc["pipeline"]["stages"];
  return parse_job(doc);
}

struct Case {
  int stages, replicas, tensors;
  const char* schedule = "1f1b";
  const char* kind = "gpt";  // bert: masked LM, labels -100 through the vocabulary-parallel loss
};

// Compares the run in `dir` (trained from `doc`) with the reference loop:
// every parameter of every stage, each tensor rank's file against its own
// share of the reference weight; whole ones bitwise equal on every rank.
void expect_reference_weights(const std::string& dir, const nlohmann::json& doc, const RunResult& run, Case c) {
  const JobSpec job = parse_job(doc);
  const JobSpec ref_job = single_process(doc);
  Reference ref = reference_loop(ref_job, {}, c10::kCPU, c.replicas);
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (std::size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], ref.losses[i], 1e-5 * std::abs(ref.losses[i])) << "iteration " << i;
  // The reference's parameters by name, in model order, and the stage of each.
  auto layers = build_layers(ref_job);
  std::vector<std::string> names;
  std::vector<int> stage_of;
  for (int l = 0; l < static_cast<int>(layers.size()); ++l)
    for (const auto& item : layers[l]->named_parameters()) {
      names.push_back(item.key());
      stage_of.push_back(run.plan.stage_of(l));
    }
  ASSERT_EQ(names.size(), ref.weights.size());
  for (int s = 0; s < c.stages; ++s) {
    std::vector<std::vector<at::Tensor>> ranks;
    for (int k = 0; k < c.tensors; ++k) {
      const std::string file = dir + "/weights/stage" + std::to_string(s) + (k ? ".tensor" + std::to_string(k) : "") + ".pt";
      ASSERT_TRUE(std::filesystem::exists(file)) << file;
      ranks.push_back(load_stage_parameters(file));
    }
    std::size_t next = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (stage_of[i] != s) continue;
      for (int k = 0; k < c.tensors; ++k) {
        ASSERT_LT(next, ranks[k].size());
        at::Tensor got = ranks[k][next], want = expected_shard(names[i], ref.weights[i], c.tensors, k);
        const std::string what = "stage " + std::to_string(s) + " tensor rank " + std::to_string(k) + " " + names[i];
        if (names[i].find("qkv.bias") != std::string::npos) {
          // An attention key bias's gradient is 0 analytically, rounding
          // noise numerically, which Adam scales to steps of up to lr: it
          // follows the summation order (test_data_parallel.cpp), so its key
          // third alone is left out.
          const std::int64_t h = got.size(0) / 3;
          got = at::cat({got.narrow(0, 0, h), got.narrow(0, 2 * h, h)});
          want = at::cat({want.narrow(0, 0, h), want.narrow(0, 2 * h, h)});
        }
        expect_close(got, want, 1e-5, what);
        if (got.sizes() == ref.weights[i].sizes() && k > 0)
          EXPECT_TRUE(at::equal(ranks[k][next], ranks[0][next])) << what << ": whole weights differ between ranks";
      }
      ++next;
    }
    for (int k = 0; k < c.tensors; ++k) EXPECT_EQ(next, ranks[k].size()) << "stage " << s;
  }
  // Trained, not equal-but-untouched.
  EXPECT_GT((ref.weights[0] - layers[0]->parameters()[0]).abs().max().item<double>(), 1e-4);
}

class TensorParallelRun : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallelRun, TrainsWhatOneProcessTrainsWithTheWholeModel) {
  const Case c = GetParam();
  auto doc = tp_job(c.stages, c.replicas, c.tensors);
  doc["pipeline"]["schedule"] = c.schedule;
  doc["model"]["kind"] = c.kind;
  const std::string dir = temp_dir("tp");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  expect_reference_weights(dir, doc, run, c);
  // Every worker reported, named by its place; rank = (stage x d + replica) x t + k.
  ASSERT_EQ(run.stages.size(), static_cast<std::size_t>(c.stages * c.replicas * c.tensors));
  for (const auto& s : run.stages)
    EXPECT_EQ(s.at("rank").get<int>(),
              (s.at("stage").get<int>() * c.replicas + s.at("replica").get<int>()) * c.tensors + s.at("tensor").get<int>());
  // Tensor rank 0 records the group's events, the others none; each
  // forward and backward is followed by its all-reduces' event, adjacent
  // (the action's compute ends where they begin, as the simulator draws it).
  for (int s = 0; s < c.stages; ++s) {
    const std::string file = dir + "/events/stage" + std::to_string(s) + ".jsonl";
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    EXPECT_FALSE(std::filesystem::exists(dir + "/events/stage" + std::to_string(s) + ".tensor1.jsonl"));
    int tensor_events = 0, after_compute = 0;
    std::optional<Event> last;
    for (std::string line; std::getline(in, line);) {
      auto e = event_from_json_line(line);
      if (!e) continue;
      if (e->kind == EventKind::TensorAllReduce) {
        ++tensor_events;
        EXPECT_GT(e->bytes, 0);
        EXPECT_LE(e->start_ns, e->end_ns);
        if (last && (last->kind == EventKind::Forward || last->kind == EventKind::Backward ||
                     last->kind == EventKind::BackwardInput || last->kind == EventKind::BackwardWeight) &&
            last->microbatch == e->microbatch && last->end_ns == e->start_ns)
          ++after_compute;
      }
      last = *e;
    }
    // A forward and a backward per microbatch and iteration, each with its all-reduces.
    const int per_replica = parse_job(doc).pipeline.microbatches;  // a replica's share
    // (A split backward's W replays its segment where the split is not sound, split_backward.h: its
    // all-reduces then run again, an event more.)
    if (std::string(c.schedule) == "1f1b")
      EXPECT_EQ(tensor_events, 2 * per_replica * kIterations) << file;
    else
      EXPECT_GE(tensor_events, 2 * per_replica * kIterations) << file;
    EXPECT_EQ(after_compute, tensor_events) << file;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Runtime, TensorParallelRun,
                         ::testing::Values(Case{1, 1, 2}, Case{2, 1, 2}, Case{1, 2, 2}, Case{2, 1, 2, "zb-h1"},
                                           Case{2, 1, 2, "1f1b", "bert"}),
                         [](const auto& info) {
                           std::string s = info.param.schedule;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return std::to_string(info.param.stages) + "x" + std::to_string(info.param.replicas) + "x" +
                                  std::to_string(info.param.tensors) + "_" + s +
                                  (std::string(info.param.kind) == "gpt" ? "" : "_" + std::string(info.param.kind));
                         });

// Clipping sees the whole model's gradient norm: each shard once, each
// whole parameter once (not t times); a clip this tight changes every step.
TEST(TensorParallel, ClippingActsOnTheWholeGradient) {
  auto doc = tp_job(2, 1, 2);
  doc["training"]["clip_grad_norm"] = 0.05;
  const std::string dir = temp_dir("tp-clip");
  RunResult run = run_job(options(doc, dir));
  ASSERT_EQ(run.exit_code, 0) << run.error;
  expect_reference_weights(dir, doc, run, Case{2, 1, 2});
  auto unclipped = tp_job(2, 1, 2);
  EXPECT_NE(reference_loop(single_process(doc)).losses.back(), reference_loop(single_process(unclipped)).losses.back());
  std::filesystem::remove_all(dir);
}

// ---- refusals ----

void expect_refused(nlohmann::json doc, const std::string& field, const std::string& words) {
  try {
    run_job(options(doc, temp_dir("tp-refused")));
    FAIL() << "the run started";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(TensorParallel, ModelsThatCannotBeSplitAreRefusedNamingParallelTensor) {
  auto cnn = mlp_job(1, 2, "1f1b");
  cnn["model"] = {{"kind", "cnn"}, {"image_size", 8}, {"in_channels", 1}, {"channels", {4}}, {"classes", 10},
                  {"precision", "fp32"}};
  cnn["cluster"]["devices"] = 2;
  cnn["parallel"] = {{"tensor", 2}};
  expect_refused(cnn, "parallel.tensor", "model.kind \"cnn\"");
  auto mlp = mlp_job(1, 2, "1f1b");
  mlp["cluster"]["devices"] = 2;
  mlp["parallel"] = {{"tensor", 2}};
  expect_refused(mlp, "parallel.tensor", "model.kind \"mlp\"");
}

TEST(TensorParallel, TorchScriptIsRefusedNamingParallelTensor) {
  JobSpec job = parse_job(tp_job(1, 1, 2));
  job.model.kind = "torchscript";  // the check reads the kind only: no model file needed
  try {
    check_tensor_parallel(job);
    FAIL() << "a TorchScript model was accepted for splitting";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "parallel.tensor");
    EXPECT_NE(std::string(e.what()).find("TorchScript"), std::string::npos) << e.what();
  }
}

TEST(TensorParallel, HeadsOrWidthNotDivisibleAreRefusedNamingParallelTensor) {
  auto heads = tp_job(1, 1, 2);
  heads["model"]["heads"] = 1;
  expect_refused(heads, "parallel.tensor", "model.heads (1)");
  auto three = tp_job(1, 1, 4);
  three["model"]["heads"] = 4;
  three["model"]["hidden"] = 36;
  three["model"]["ffn_mult"] = 1;  // FFN 36: 4 divides it; 3 ranks divide neither
  three["parallel"]["tensor"] = 3;
  three["cluster"]["devices"] = 3;
  expect_refused(three, "parallel.tensor", "model.heads (4)");
}

// Each tensor rank checkpoints its own shard beside the others; a resumed
// run ends bitwise where the uninterrupted one did.
TEST(TensorParallel, ResumeFromACheckpointGivesBitwiseTheSameWeights) {
  auto doc = tp_job(2, 1, 2, 2);
  doc["training"]["iterations"] = 5;
  const JobSpec job = parse_job(doc);
  expect_bitwise_resume(doc, "tp-ckpt", [&](const std::string& dir) {
    for (const char* f : {"stage0.pt", "stage0.tensor1.pt", "stage1.pt", "stage1.tensor1.pt"})
      EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint/3/" + f)) << f;
    // The split is what is saved, and so what the resumed run loads into
    // its shards (a whole parameter would be refused by its shape): the
    // token embedding (stage 0's first parameter) and the head's projection
    // (stage 1's last two) in V/t rows.
    const std::int64_t rows = job.model.vocab / 2, h = job.model.hidden;
    for (const char* f : {"stage0.pt", "stage0.tensor1.pt"})
      EXPECT_EQ(load_stage_parameters(dir + "/checkpoint/3/" + f).front().sizes(), at::IntArrayRef({rows, h})) << f;
    for (const char* f : {"stage1.pt", "stage1.tensor1.pt"}) {
      auto p = load_stage_parameters(dir + "/checkpoint/3/" + f);
      ASSERT_GE(p.size(), 2u) << f;
      EXPECT_EQ(p[p.size() - 2].sizes(), at::IntArrayRef({rows, h})) << f;
      EXPECT_EQ(p.back().sizes(), at::IntArrayRef({rows})) << f;
    }
  });  // (its weight comparison reads tensor rank 0's files, stage<s>.pt)
}

// A resume cannot change the split: each rank's file holds its shard.
TEST(TensorParallel, ResumeWithAnotherSplitIsRefused) {
  auto doc = tp_job(2, 1, 2, 2);
  doc["training"]["iterations"] = 4;
  const std::string a = temp_dir("tp-split-a"), b = temp_dir("tp-split-b");
  RunOptions o = options(doc, a);
  o.checkpoint_every = 3;
  ASSERT_EQ(run_job(o).exit_code, 0);
  auto whole = doc;
  whole["parallel"]["tensor"] = 1;
  whole["cluster"]["devices"] = 2;
  RunOptions r = options(whole, b);
  r.resume_dir = a;
  try {
    RunResult resumed = run_job(r);
    EXPECT_NE(resumed.exit_code, 0);
    EXPECT_NE(resumed.error.find("parallel.tensor"), std::string::npos) << resumed.error;
  } catch (const SpecError& e) {  // the job check, before any worker starts
    EXPECT_EQ(e.path(), "parallel.tensor") << e.what();
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

}  // namespace
}  // namespace pw::rt
