#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/nas/csp_policy.h"
#include "core/nas/search_space.h"
#include "core/spec/job_spec.h"

namespace pw::rt::nas {

// The Fashion-MNIST CNN supernet (core's "fmnist-cnn" space) as plain ATen
// tensors and functional ops, so forward and backward are the same
// floating-point operations whichever process runs them. Every candidate's
// weights are drawn from a generator seeded by (seed, layer, choice): each
// process builds bit-identical candidates for the layers it holds.
struct Candidate {
  int kernel = 0;  // 0: identity
  std::vector<at::Tensor> params;  // conv k (w x C x k x k), bias w, 1x1 (C x w x 1 x 1), bias C
  // Optimizer state, made with the candidate (zeros; what torch's lazy
  // init starts from), so its bytes are fixed: momentum one buffer per
  // parameter, Adam two (first, second moment) then `steps` taken.
  std::vector<at::Tensor> state;
  std::int64_t steps = 0;
  at::Tensor forward(const at::Tensor& x) const;
};

// The candidates' optimizer (training.optimizer): sgd, momentum (0.9, as
// the engine's torch::optim::SGD), adam (torch's defaults: betas 0.9 /
// 0.999, eps 1e-8), written out on the candidate's own tensors so its
// state can move with it between host and device.
struct CandidateOptimizer {
  std::string kind = "sgd";
  double lr = 0;
  // One step on `c` with its parameters' gradients; zeroes them.
  void step(Candidate& c) const;
};

class CnnSupernet {
 public:
  // Holds choice layers [slots.first, slots.last], plus the frozen stem
  // (when slots.first == 0) and the frozen head (when it holds the last).
  // Optimizer state is made for training.optimizer.
  CnnSupernet(const JobSpec& job, const pw::nas::SearchSpace& space, pw::nas::StageSlots slots);

  bool has_stem() const { return slots_.first == 0; }
  bool has_head() const { return has_head_; }
  at::Tensor stem(const at::Tensor& images) const;        // [B,1,28,28] -> [B,C,14,14]
  at::Tensor head(const at::Tensor& x) const;             // [B,C,14,14] -> logits
  // The subnet's choice layers held here, in order.
  at::Tensor layers(const pw::nas::Subnet& subnet, const at::Tensor& x) const;
  // Plain SGD on the subnet's candidates held here; zeroes their gradients.
  void sgd_update(const pw::nas::Subnet& subnet, double lr);
  // The job's optimizer on the subnet's candidates held here.
  void update(const pw::nas::Subnet& subnet, const CandidateOptimizer& opt);
  // Candidate `choice` of choice layer `layer` (held here), for the device
  // cache, which swaps its tensors between host and device.
  Candidate& candidate(int layer, int choice) { return layers_.at(layer - slots_.first).at(choice); }
  const Candidate& candidate(int layer, int choice) const { return layers_.at(layer - slots_.first).at(choice); }
  int choices(int layer) const { return static_cast<int>(layers_.at(layer - slots_.first).size()); }
  // The frozen stem's and head's weight and bias (held when has_stem() /
  // has_head()), for writing a subnet out on its own.
  std::pair<at::Tensor, at::Tensor> stem_params() const { return {stem_w_, stem_b_}; }
  std::pair<at::Tensor, at::Tensor> head_params() const { return {head_w_, head_b_}; }

  // FNV-1a over the raw bytes of every trainable parameter held here, in
  // (layer, choice, parameter) order.
  std::uint64_t hash() const;
  // The same over choice layers [first, last] only (a sub-range of those held).
  std::uint64_t hash_range(int first, int last) const;
  const pw::nas::StageSlots& slots() const { return slots_; }
  // The raw bytes of every candidate parameter of layers [first, last], in
  // hash order: what a stage writes after training and a search loads.
  // load() throws naming the file when its size does not match.
  void save(const std::string& path) const;
  void load(const std::string& path, int first, int last);
  // A checkpoint of the training state held here: every candidate's
  // parameters and optimizer state as raw bytes, in (layer, choice, tensor)
  // order, and each candidate's optimizer step count (Adam's bias
  // correction) in the same order. Restoring both gives bitwise the state
  // that was saved; the sizes are checked, naming `what`.
  std::string state_bytes() const;
  std::vector<std::int64_t> optimizer_steps() const;
  void restore_state(const std::string& bytes, const std::vector<std::int64_t>& steps, const std::string& what);
  std::vector<std::int64_t> activation_shape(int batch) const { return {batch, channels_, half_, half_}; }

 private:
  pw::nas::StageSlots slots_;
  bool has_head_ = false;
  std::int64_t channels_, half_;
  std::vector<std::vector<Candidate>> layers_;  // [layer - first][choice]
  at::Tensor stem_w_, stem_b_, head_w_, head_b_;
};

std::uint64_t fnv1a(const at::Tensor& t, std::uint64_t h = 1469598103934665603ull);

}  // namespace pw::rt::nas

namespace pw::rt::nas {
// Mean cross-entropy of logits against int64 labels.
at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels);
}  // namespace pw::rt::nas
