#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "core/spec/job_spec.h"

namespace pw::rt::nas {

// Fashion-MNIST batches for supernet training: batch b (= subnet b) is a
// fixed function of (seed, b), so every process reads the same batch.
// (A small standalone reader so the NAS trainer builds while pw_runtime is
// in flux; it reads the same files as pw::rt::TrainData.)
class FmnistBatches {
 public:
  explicit FmnistBatches(const JobSpec& job);
  at::Tensor images(std::int64_t b) const;  // [B, 1, 28, 28] float in [0, 1]
  at::Tensor labels(std::int64_t b) const;  // [B] int64

 private:
  at::Tensor indices(std::int64_t b) const;
  at::Tensor images_, labels_, perm_;
  std::int64_t batch_;
};

}  // namespace pw::rt::nas
