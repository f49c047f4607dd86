#pragma once
// What the tensor-parallel tests share (test_tensor_parallel.cpp: the blocks
// and whole runs; test_vocab_parallel.cpp: the embedding, head and loss split
// by vocabulary): the tiny GPT job, this test's own reading of Megatron-LM's
// layout (which rows or columns of a whole parameter tensor rank k holds),
// a tolerance check, and t threads as one tensor group.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/process_group.h"
#include "runtime/tensor_parallel/tensor_set.h"

namespace pw::rt::testing {

inline constexpr int kIterations = 20;

// The tiny GPT of test_data_parallel (hidden 32, 2 heads, FFN 64, the
// byte vocabulary of 256) on the fortunes text, one stage per layer block
// when split in two.
inline nlohmann::json tp_job(int stages, int replicas, int tensors, int layers = 1) {
  nlohmann::json m{{"kind", "gpt"}, {"layers", layers}, {"hidden", 32}, {"heads", 2}, {"seq_len", 16},
                   {"vocab", 256}, {"ffn_mult", 2}, {"precision", "fp32"}};
  return {{"name", "tp-gpt"},
          {"model", m},
          {"data", {{"kind", "text"}}},
          {"training", {{"optimizer", "adam"}, {"lr", 0.003}, {"batch_size", 8}, {"microbatch_size", 2},
                        {"iterations", kIterations}, {"seed", 5}}},
          {"cluster", {{"devices", stages * replicas * tensors}, {"device", "custom"}, {"memory_gb", 1},
                       {"tflops", 0.05}}},
          {"pipeline", {{"stages", stages}, {"schedule", "1f1b"}, {"planner", "uniform"}}},
          {"parallel", {{"data", replicas}, {"tensor", tensors}}}};
}

// Rank k's rows of a column-parallel weight or bias, by this test's reading
// of the layout: `parts` blocks along dim 0 (q, k, v for the fused qkv),
// each split in t consecutive row ranges (heads k h/t .. (k+1) h/t - 1; with
// one part, tokens k V/t .. (k+1) V/t - 1 of a vocabulary-parallel weight).
inline at::Tensor rows_of_rank(const at::Tensor& whole, int parts, int t, int k) {
  const std::int64_t block = whole.size(0) / parts, mine = block / t;
  std::vector<std::int64_t> idx;
  for (int p = 0; p < parts; ++p)
    for (std::int64_t i = 0; i < mine; ++i) idx.push_back(p * block + k * mine + i);
  return whole.index_select(0, torch::tensor(idx));
}
// Rank k's columns of a row-parallel weight.
inline at::Tensor cols_of_rank(const at::Tensor& whole, int t, int k) {
  const std::int64_t mine = whole.size(1) / t;
  return whole.narrow(1, k * mine, mine);
}

// Whether a parameter named `name` (its key in its layer) is split by
// vocabulary: the token embedding ("0.tok.weight": the layer is a
// Sequential of the embedding), and the head's projection (the head is a
// Sequential of "0", its layer norm, and "1"; every other layer of the GPT
// or BERT has one item, "0").
inline bool vocabulary_parallel(const std::string& name) {
  return name == "0.tok.weight" || name == "1.weight" || name == "1.bias";
}

// What rank k of t holds of a whole parameter named `name` (its key in the
// block): split by rows, by columns, or whole.
inline at::Tensor expected_shard(const std::string& name, const at::Tensor& whole, int t, int k) {
  auto ends = [&](const char* s) {
    return name.size() >= std::strlen(s) && name.rfind(s) == name.size() - std::strlen(s);
  };
  if (ends("qkv.weight") || ends("qkv.bias")) return rows_of_rank(whole, 3, t, k);
  if (ends("up.weight") || ends("up.bias") || vocabulary_parallel(name)) return rows_of_rank(whole, 1, t, k);
  if (ends("proj.weight") || ends("down.weight")) return cols_of_rank(whole, t, k);
  return whole;  // layer norms, the row-parallel biases, the position embedding
}

inline void expect_close(const at::Tensor& got, const at::Tensor& want, double rel, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const double scale = std::max(want.abs().max().item<double>(), 1e-30);
  EXPECT_LE((got - want).abs().max().item<double>(), rel * scale) << what;
}

// Runs `body(set)` on t threads, one per tensor rank, over one store.
inline void on_tensor_ranks(int t, const std::string& prefix, const std::function<void(const TensorSet&)>& body) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(t);
  for (int k = 0; k < t; ++k)
    ranks.emplace_back([&, k] {
      try {
        TensorSet set;
        set.group = make_gloo_group(store, k, t, {.prefix = prefix, .timeout = std::chrono::seconds(60), .threads = 1,
                                                  .device = nullptr});
        set.index = k;
        set.count = t;
        body(set);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  for (auto& r : ranks) r.join();
  for (int k = 0; k < t; ++k) EXPECT_EQ(errors[k], "") << "tensor rank " << k;
}

}  // namespace pw::rt::testing
