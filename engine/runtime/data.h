#pragma once
#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <map>
#include <memory>
#include <string>

#include "core/spec/job_spec.h"

namespace pw::rt {


struct Batch {
  at::Tensor input;
  at::Tensor target;  // int64 class labels
};

// A labelled dataset held in memory.
struct Dataset {
  at::Tensor inputs;  // [N, ...] float
  at::Tensor labels;  // [N] int64 classes, or [N, seq] int64 tokens (-100: not scored)
  int64_t size() const { return inputs.size(0); }
};

// Reads one IDX file pair (images, labels), gzip-compressed. Throws
// std::runtime_error naming the file for unreadable or malformed input.
Dataset read_idx_pair(const std::string& images_gz, const std::string& labels_gz, int64_t limit);

// Byte-level text windows from every plain file in `dir` (sorted names; the
// fortunes package's .dat/.u8 companions are skipped). gpt: next-byte
// targets; bert: 15% of positions masked (byte 255 as the mask id) and
// scored. The last 5% of windows are the test split.
Dataset read_text_windows(const std::string& dir, int seq_len, bool masked, bool test, uint64_t seed);

// Deterministic training stream: sample positions run through a seeded
// permutation per epoch, so microbatch (iteration, k) is the same in every
// process that asks for it.
class TrainData {
 public:
  explicit TrainData(const JobSpec& job);
  // On the device set_device chose (the CPU by default). `index` counts
  // this replica's microbatches (pipeline.microbatches of them).
  Batch microbatch(int64_t iteration, int index);
  void set_device(c10::Device d) { device_ = d; }
  // Replica `replica` of the pipeline (parallel.data) trains on the
  // replica-th contiguous share of each global batch: its microbatch k is
  // the global batch's microbatch replica x pipeline.microbatches + k, so
  // the replicas together see what one process sees (docs/engine.md).
  void set_replica(int replica) { replica_ = replica; }
  const Dataset& train() const { return train_; }
  // The held-out set (fashion-mnist test split; synthetic: a fresh draw).
  Dataset test() const;

 private:
  const at::Tensor& permutation(int64_t epoch);
  DataSpec spec_;  // job.data, parsed and checked by the core (core/spec/data_spec.h)
  JobSpec job_;
  Dataset train_;
  std::map<int64_t, at::Tensor> perms_;
  c10::Device device_{c10::kCPU};
  int replica_ = 0;
};

}  // namespace pw::rt
