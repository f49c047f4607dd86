// Tensor parallelism's vocabulary split (issue 40; runtime/tensor_parallel/
// vocab_layers.h, vocab_cross_entropy.h): the token embedding's and the
// head's shards over t ranks compute what the whole layers compute, and the
// vocabulary-parallel cross entropy and argmax what torch's give over the
// whole logits (module level, threads over one in-process store); each rank
// holds and accounts V/t x hidden of each; a vocabulary t does not divide is
// refused naming parallel.tensor. Whole runs against the single-process loop
// (every loss, every weight slice) are test_tensor_parallel.cpp's, whose
// expected shards split these parameters by vocabulary.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "core/spec/spec_error.h"
#include "run_helpers.h"
#include "runtime/layers.h"
#include "runtime/tensor_parallel/tensor_layers.h"
#include "runtime/tensor_parallel/vocab_cross_entropy.h"
#include "tensor_parallel_helpers.h"

namespace pw::rt {
namespace {
using namespace testing;

// Layers built before the threads start: build_layers seeds torch's one
// global generator, which threads building at once would share.
std::vector<torch::nn::Sequential> one_per_rank(const JobSpec& job, int layer, int t) {
  std::vector<torch::nn::Sequential> out;
  for (int k = 0; k < t; ++k) out.push_back(build_layers(job)[layer]);
  return out;
}

// Each parameter of a rank's shard against this test's share of the whole
// layer's (values exactly, gradients within `rel`).
void expect_parameters_are_shares(const torch::nn::Sequential& whole, const torch::nn::Sequential& shard, int t,
                                  int k, double rel, const std::string& where) {
  auto w = whole->named_parameters(), s = shard->named_parameters();
  ASSERT_EQ(w.size(), s.size()) << where;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string name = w[i].key();
    EXPECT_EQ(s[i].key(), name) << where;
    expect_close(s[i].value(), expected_shard(name, w[i].value().detach(), t, k), 0, where + " " + name);
    expect_close(s[i].value().grad(), expected_shard(name, w[i].value().grad(), t, k), rel,
                 where + " gradient of " + name);
  }
}

// The embedding's shards: the whole lookup (tokens from every rank's range),
// each rank's rows of the token embedding's gradient, V/t x hidden held.
void expect_embedding_shards(int t) {
  auto doc = tp_job(1, 1, t);
  doc["model"]["heads"] = t;  // any t here divides heads and FFN width
  const JobSpec job = parse_job(doc);
  const std::int64_t v = job.model.vocab, h = job.model.hidden;
  torch::manual_seed(12);
  const at::Tensor tokens = torch::randint(0, v, {2, job.model.seq_len}, at::kLong);
  const at::Tensor upstream = torch::randn({2, job.model.seq_len, h});
  auto whole = build_layers(job)[0];
  at::Tensor y = whole->forward(tokens);
  y.backward(upstream);
  auto fresh = one_per_rank(job, 0, t);
  on_tensor_ranks(t, "emb" + std::to_string(t), [&](const TensorSet& set) {
    auto shard = shard_layer(fresh[set.index], set);
    const std::string where = "embedding rank " + std::to_string(set.index) + " of " + std::to_string(t);
    EXPECT_EQ(shard->named_parameters()["0.tok.weight"].numel(), v / t * h) << where;
    at::Tensor ys = shard->forward(tokens);
    ys.backward(upstream);
    // One rank's row plus the others' zeros: the whole lookup exactly.
    expect_close(ys, y, 0, where + " output");
    expect_parameters_are_shares(whole, shard, t, set.index, 1e-6, where);
  });
}

TEST(TensorParallelVocab, EmbeddingShardsComputeTheWholeLookup) { expect_embedding_shards(2); }
TEST(TensorParallelVocab, FourWayEmbeddingShardsComputeTheWholeLookup) { expect_embedding_shards(4); }

// The head's shards and the vocabulary-parallel loss against the whole head
// and torch's cross entropy: logits (each rank its columns), loss, the
// input's gradient, each rank's rows of the projection's gradient; targets
// -100 (masked LM's unscored positions) left out of the mean as torch does.
TEST(TensorParallelVocab, HeadShardsAndTheParallelLossComputeTheWholeLoss) {
  const int t = 2;
  const JobSpec job = parse_job(tp_job(1, 1, t));
  const int head = static_cast<int>(build_layers(job).size()) - 1;
  const std::int64_t v = job.model.vocab, h = job.model.hidden, s = job.model.seq_len;
  torch::manual_seed(13);
  const at::Tensor x0 = torch::randn({2, s, h});
  at::Tensor target = torch::randint(0, v, {2, s}, at::kLong);
  target.index_put_({0, torch::indexing::Slice(0, 5)}, -100);
  auto whole = build_layers(job)[head];
  at::Tensor x = x0.clone().requires_grad_(true);
  const at::Tensor logits = whole->forward(x);
  at::Tensor loss = pipeline_loss(logits, target);
  loss.backward();
  auto fresh = one_per_rank(job, head, t);
  on_tensor_ranks(t, "head", [&](const TensorSet& set) {
    auto shard = shard_layer(fresh[set.index], set);
    const std::string where = "head rank " + std::to_string(set.index);
    EXPECT_EQ(shard->named_parameters()["1.weight"].numel(), v / t * h) << where;
    EXPECT_EQ(shard->named_parameters()["1.bias"].numel(), v / t) << where;
    at::Tensor xs = x0.clone().requires_grad_(true);
    const at::Tensor part = shard->forward(xs);
    expect_close(part, logits.narrow(2, set.index * v / t, v / t), 1e-6, where + " logits");
    at::Tensor ls = pipeline_loss(part, target, &set);
    EXPECT_NEAR(ls.item<double>(), loss.item<double>(), 1e-6 * loss.item<double>()) << where;
    ls.backward();
    expect_close(xs.grad(), x.grad(), 1e-5, where + " input gradient");
    expect_parameters_are_shares(whole, shard, t, set.index, 1e-5, where);
  });
}

// Logits whose exp overflows a float (~e^200): the shared maximum keeps
// every rank's sum finite, as a whole softmax's shift does; loss and
// gradient equal torch's over the whole rows, on 2 and 4 ranks.
TEST(TensorParallelVocab, ParallelCrossEntropyEqualsTorchsOnLogitsBeyondExp) {
  torch::manual_seed(14);
  const at::Tensor logits = torch::randn({6, 16}) * 20 + 200;
  const at::Tensor target = torch::tensor({0, 7, 8, 15, -100, 3}, at::kLong);
  at::Tensor whole = logits.clone().requires_grad_(true);
  at::Tensor want = torch::nn::functional::cross_entropy(whole, target);
  want.backward();
  ASSERT_TRUE(std::isfinite(want.item<double>()));
  for (int t : {2, 4})
    on_tensor_ranks(t, "ce" + std::to_string(t), [&](const TensorSet& set) {
      const std::int64_t n = 16 / t;
      at::Tensor part = logits.narrow(1, set.index * n, n).clone().requires_grad_(true);
      at::Tensor got = vocab_parallel_cross_entropy(part, target, set);
      const std::string where = "rank " + std::to_string(set.index) + " of " + std::to_string(t);
      EXPECT_NEAR(got.item<double>(), want.item<double>(), 1e-6 * want.item<double>()) << where;
      got.backward();
      expect_close(part.grad(), whole.grad().narrow(1, set.index * n, n), 1e-5, where + " gradient");
    });
}

// Evaluation's prediction over shards: torch's argmax of the whole row, the
// first maximum on a tie between ranks, inside a rank, or over the whole row.
TEST(TensorParallelVocab, ArgmaxOverShardsIsTheWholeArgmaxTiesIncluded) {
  const at::Tensor logits = torch::tensor({{0.f, 1.f, 5.f, 0.f, 2.f, 5.f, 1.f, 0.f},     // tie across ranks
                                           {0.f, 1.f, 2.f, 0.f, 2.f, 7.f, 1.f, 7.f},     // tie inside a rank
                                           {-3.f, -1.f, -2.f, -4.f, -2.f, -5.f, 0.f, -7.f},
                                           {1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f}})
                               .reshape({2, 2, 8});  // [b, s, V] as the head gives
  const at::Tensor want = logits.argmax(-1);
  ASSERT_EQ(want[0][0].item<std::int64_t>(), 2);
  for (int t : {2, 4})
    on_tensor_ranks(t, "argmax" + std::to_string(t), [&](const TensorSet& set) {
      const std::int64_t n = 8 / t;
      EXPECT_TRUE(at::equal(vocab_parallel_argmax(logits.narrow(2, set.index * n, n), set), want))
          << "rank " << set.index << " of " << t;
    });
}

TEST(TensorParallelVocab, VocabularyNotDivisibleIsRefusedNamingParallelTensor) {
  JobSpec job = parse_job(tp_job(1, 1, 2));
  job.model.vocab = 255;  // the check reads the model only (the text data itself needs 256)
  try {
    check_tensor_parallel(job);
    FAIL() << "a vocabulary of 255 was split over 2 ranks";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.path(), "parallel.tensor");
    EXPECT_NE(std::string(e.what()).find("vocabulary of 255 tokens (model.vocab)"), std::string::npos) << e.what();
  }
}

// A real 2 stages x t 2 run: each rank's weight file holds V/t rows of the
// token embedding (stage 0) and of the head (stage 1), and the stage's
// recorded parameter bytes are its layers' with every split parameter at
// 1/t (a whole embedding or head would add V/2 x hidden floats); evaluation
// predicts over the whole vocabulary (the same accuracy as the unsplit run
// of the same model).
TEST(TensorParallelVocab, EachRankHoldsAndAccountsItsVocabularyShare) {
  auto doc = tp_job(2, 1, 2);
  doc["training"]["iterations"] = 3;
  doc["data"]["test_samples"] = 64;  // 64 windows of 16 tokens: the whole test text takes ~15 s a run
  const JobSpec job = parse_job(doc);
  const std::int64_t v = job.model.vocab, h = job.model.hidden;
  const std::string dir = temp_dir("tp-vocab");
  RunOptions o = options(doc, dir);
  o.eval = true;
  RunResult run = run_job(o);
  ASSERT_EQ(run.exit_code, 0) << run.error;
  auto layers = build_layers(job);
  std::vector<std::int64_t> want_bytes(2, 0);
  for (int l = 0; l < static_cast<int>(layers.size()); ++l)
    for (const auto& p : layers[l]->named_parameters())
      want_bytes[run.plan.stage_of(l)] += expected_shard(p.key(), p.value(), 2, 0).numel() * 4;
  ASSERT_EQ(run.stages.size(), 4u);
  for (const auto& s : run.stages)
    EXPECT_EQ(s.at("params_bytes").get<std::int64_t>(), want_bytes[s.at("stage").get<int>()]) << s.dump();
  for (const char* f : {"stage0.pt", "stage0.tensor1.pt"})
    EXPECT_EQ(load_stage_parameters(dir + "/weights/" + f).front().sizes(), at::IntArrayRef({v / 2, h})) << f;
  for (const char* f : {"stage1.pt", "stage1.tensor1.pt"}) {
    auto p = load_stage_parameters(dir + "/weights/" + f);
    EXPECT_EQ(p[p.size() - 2].sizes(), at::IntArrayRef({v / 2, h})) << f;
  }
  auto unsplit = doc;
  unsplit.erase("parallel");
  unsplit["cluster"]["devices"] = 2;
  const std::string dir1 = temp_dir("tp-vocab-1");
  RunOptions o1 = options(unsplit, dir1);
  o1.eval = true;
  RunResult one = run_job(o1);
  ASSERT_EQ(one.exit_code, 0) << one.error;
  EXPECT_GT(one.accuracy, 0.0);
  EXPECT_EQ(run.accuracy, one.accuracy);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir1);
}

}  // namespace
}  // namespace pw::rt
