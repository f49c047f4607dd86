#pragma once
#include <ATen/ATen.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/spec/job_spec.h"
#include "runtime/coordinator.h"
#include "runtime/stage.h"

namespace pw::rt::testing {

// A small MLP on synthetic data; `edit` adjusts the document.
inline nlohmann::json mlp_job(int stages, int microbatches, const std::string& schedule,
                              std::vector<int> widths = {32, 32, 32}, int iterations = 3) {
  return {{"name", "test-mlp"},
          {"model", {{"kind", "mlp"}, {"input", 20}, {"widths", widths}, {"classes", 5}, {"precision", "fp32"}}},
          {"data", {{"kind", "synthetic"}, {"samples", 256}}},
          {"training",
           {{"optimizer", "adam"}, {"lr", 0.01}, {"batch_size", 4 * microbatches}, {"microbatch_size", 4},
            {"iterations", iterations}, {"seed", 7}}},
          {"cluster", {{"devices", stages}, {"device", "custom"}, {"memory_gb", 1}, {"tflops", 0.05}}},
          {"pipeline", {{"stages", stages}, {"schedule", schedule}}}};
}

inline std::string temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("pw-rt-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  std::filesystem::remove_all(d);
  return d.string();
}

inline RunOptions options(const nlohmann::json& doc, const std::string& run_dir) {
  RunOptions o;
  o.job = parse_job(doc);
  o.run_dir = run_dir;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = 1;
  return o;
}

// Final weights of a run, in model order (stages hold contiguous layers).
inline std::vector<at::Tensor> run_weights(const std::string& run_dir, int stages) {
  std::vector<at::Tensor> out;
  for (int s = 0; s < stages; ++s) {
    auto w = load_stage_parameters(run_dir + "/weights/stage" + std::to_string(s) + ".pt");
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

}  // namespace pw::rt::testing
