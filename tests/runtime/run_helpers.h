#pragma once
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
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

// A plan's stages as layer ranges [[first, last], ...], as plan JSON and
// migration scripts write them.
inline nlohmann::json ranges(std::vector<std::pair<int, int>> r) {
  auto a = nlohmann::json::array();
  for (auto [f, l] : r) a.push_back({f, l});
  return a;
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

// A run of `doc` (5 iterations, 2 stages) checkpointed every 3 iterations,
// and a second run resumed from it: the resumed run starts at 3, its last
// loss and its final weights are bitwise the uninterrupted run's.
// `after_full` looks into the first run's directory before the resume.
inline void expect_bitwise_resume(const nlohmann::json& doc, const std::string& name,
                                  const std::function<void(const std::string&)>& after_full = {}) {
  std::string a = temp_dir(name + "-a"), c = temp_dir(name + "-c");
  RunOptions o = options(doc, a);
  o.checkpoint_every = 3;
  RunResult full = run_job(o);
  ASSERT_EQ(full.exit_code, 0) << full.error;
  if (after_full) after_full(a);
  RunOptions r = options(doc, c);
  r.resume_dir = a;
  RunResult resumed = run_job(r);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.error;
  EXPECT_EQ(resumed.start_iteration, 3);
  ASSERT_EQ(resumed.losses.size(), 2u);
  EXPECT_EQ(resumed.losses[1], full.losses[4]);
  auto wa = run_weights(a, 2), wc = run_weights(c, 2);
  ASSERT_EQ(wa.size(), wc.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(at::equal(wa[i], wc[i])) << "parameter " << i;
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(c);
}

}  // namespace pw::rt::testing
