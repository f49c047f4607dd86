// pw_bench_gpu: the engine's overhead on one device. A 1-stage run of the
// engine (what `pipewright run` does: coordinator, one worker process, the
// stage executor) against the same training written as a plain libtorch
// loop in this process, on the same device; samples/s of each and their
// ratio (target >= 0.95).
//
// The device: PW_BENCH_DEVICE (cpu | cuda), else CUDA where libtorch sees a
// GPU, else the CPU, so scripts/bench runs it on every machine and
// scripts/gpu-check on the GPU. On CUDA the engine places the stage by the
// job's cluster.backend (default "auto": the GPU when one is visible; issue
// 18), and the program says where the worker reported it computed.
// PW_BENCH_JSON=FILE also writes the figures as one JSON object.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bench_quick.h"
#include "runtime/coordinator.h"
#include "runtime/data.h"
#include "runtime/layers.h"

using namespace pw;

namespace {

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

std::string bench_device() {
  const char* v = std::getenv("PW_BENCH_DEVICE");
  if (v && *v) return v;
  return torch::cuda::is_available() ? "cuda" : "cpu";
}

// An MLP of equal layers, sized so that one iteration is compute, not
// launch or process overhead: 1024 wide on a CPU, 4096 on a GPU.
nlohmann::json mlp_job(bool gpu, int iterations) {
  const int width = gpu ? 4096 : 1024;
  const int batch = gpu ? bench::quick_or(512, 2048) : bench::quick_or(128, 512);
  const int micro = gpu ? bench::quick_or(128, 256) : bench::quick_or(32, 64);
  return {{"name", "bench-gpu-overhead"},
          {"model", {{"kind", "mlp"}, {"input", width}, {"widths", {width, width, width}}, {"classes", width},
                     {"precision", "fp32"}}},
          {"data", {{"kind", "synthetic"}, {"samples", 4 * batch}}},
          {"training", {{"optimizer", "adam"}, {"lr", 1e-4}, {"batch_size", batch}, {"microbatch_size", micro},
                        {"iterations", iterations}, {"seed", 3}}},
          {"cluster", {{"devices", 1}, {"device", "custom"}, {"memory_gb", 32}, {"tflops", 1}}},
          {"pipeline", {{"stages", 1}, {"schedule", "1f1b"}}}};
}

void sync(const c10::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

// The same training as the engine's stage: gradient accumulation over the
// microbatches, one Adam step per batch; the first iteration (allocator and
// kernel warm-up) is not timed, as the engine's samples/s leaves it out.
double plain_loop_samples_per_s(const JobSpec& job, const c10::Device& device) {
  auto layers = rt::build_layers(job);
  for (auto& l : layers) l->to(device);
  std::vector<at::Tensor> params;
  for (auto& l : layers)
    for (auto& p : l->parameters()) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(job.training.lr));
  rt::TrainData data(job);
  const int m = job.pipeline.microbatches;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < job.training.iterations; ++it) {
    if (it == 1) {
      sync(device);
      t0 = std::chrono::steady_clock::now();
    }
    opt.zero_grad();
    for (int k = 0; k < m; ++k) {
      rt::Batch b = data.microbatch(it, k);
      at::Tensor x = b.input.to(device);
      for (auto& l : layers) x = l->forward(x);
      (torch::nn::functional::cross_entropy(x, b.target.to(device)) / m).backward();
    }
    opt.step();
  }
  sync(device);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return job.training.batch_size * (job.training.iterations - 1) / s;
}

// Where the worker says its stage computed ("cuda:0", "cpu"), if it says.
std::string reported_device(const rt::RunResult& r) {
  for (const auto& s : r.stages) {
    // The worker's report: {"transport": {"backend", "device", "host_staged"}} (issue 18).
    if (s.contains("transport") && s["transport"].is_object() && s["transport"].contains("device"))
      return s["transport"]["device"].get<std::string>() + " over " + s["transport"].value("backend", "?");
    std::string text = s.dump();
    if (text.find("cuda:") != std::string::npos) return "cuda (named in the stage report)";
  }
  return "not reported";
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string device_name = bench_device();
  const c10::Device device(device_name);
  const bool gpu = device.is_cuda();
  int iters = argc > 1 ? std::atoi(argv[1]) : bench::quick_or(3, gpu ? 30 : 12);
  JobSpec job = parse_job(mlp_job(gpu, iters));
  // The CPU loop gets the cores a 1-stage worker gets (all of them).
  const int threads = cores();
  at::set_num_threads(threads);
  std::printf("pw_bench_gpu: engine overhead on %s (%d cores, %d iterations, batch %lld in %d microbatches, "
              "MLP %lld wide)\n\n",
              device_name.c_str(), threads, iters, static_cast<long long>(job.training.batch_size),
              job.pipeline.microbatches, static_cast<long long>(job.model.input));

  double plain = plain_loop_samples_per_s(job, device);
  std::printf("plain libtorch loop:  %10.1f samples/s\n", plain);

  rt::RunOptions o;
  o.job = job;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = threads;
  o.run_dir = (std::filesystem::temp_directory_path() / ("pw-bench-gpu-" + std::to_string(getpid()))).string();
  rt::RunResult r = rt::run_job(o);
  std::filesystem::remove_all(o.run_dir);
  if (r.exit_code != 0) {
    std::printf("engine run FAILED: %s\n", r.error.c_str());
    return 1;
  }
  const std::string where = reported_device(r);
  std::printf("engine, 1 stage:      %10.1f samples/s (%.1f ms/iteration; the worker computed on: %s)\n",
              r.samples_per_s, r.iteration_ms, where.c_str());
  const double ratio = r.samples_per_s / plain;
  std::printf("engine overhead: ratio %.3f (target >= 0.95)%s\n", ratio,
              bench::quick() ? " [quick mode: not a measurement]" : "");
  if (const char* path = std::getenv("PW_BENCH_JSON"); path && *path) {
    nlohmann::json j = {{"device", device_name},        {"worker_device", where},   {"iterations", iters},
                        {"plain_samples_per_s", plain}, {"engine_samples_per_s", r.samples_per_s},
                        {"ratio", ratio},               {"quick", bench::quick()}};
    std::ofstream(path) << j.dump(2) << "\n";
  }
  return 0;
}
