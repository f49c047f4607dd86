// pw_bench_runtime: the engine against baselines measured in this process.
//   1. overhead: `pipewright run` with 1 stage vs a plain libtorch loop
//   2. speedup: 2 stages vs 1 stage on a compute-heavy balanced model
//   3. fidelity: simulator-predicted vs measured iteration time (measured
//      profile at the workers' thread count, loss included; measured
//      loopback Gloo link; then sends and compute calibrated on a short
//      run of the job), per job: balanced MLP and the 2-stage CNN demo
//   4. memory policy: vpipe plan vs gpipe plan (all recompute) under a tight budget
//   5. zero bubble: ZB-H1 and ZB-V vs 1F1B, 2 stages, real runs of the
//      tiny GPT and the CNN demo (B and W as separate actions)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include "bench_quick.h"
#include "core/calibrate/send_cost.h"
#include "core/calibrate/stage_compute.h"
#include "core/events/event_json.h"
#include "core/job/job_plan.h"
#include "core/model/profile_io.h"
#include "runtime/coordinator.h"
#include "runtime/data.h"
#include "runtime/layers.h"
#include "runtime/profiler.h"

using namespace pw;

namespace {

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

nlohmann::json heavy_job(int stages, int iterations) {
  // Four equal 1024-wide layers: balanced for 1, 2 or 4 stages. Quick: a
  // quarter of the batch, still 4 microbatches.
  return {{"name", "bench-mlp"},
          {"model", {{"kind", "mlp"}, {"input", 1024}, {"widths", {1024, 1024, 1024}}, {"classes", 1024},
                     {"precision", "fp32"}}},
          {"data", {{"kind", "synthetic"}, {"samples", bench::quick_or(512, 2048)}}},
          {"training", {{"optimizer", "adam"}, {"lr", 1e-4}, {"batch_size", bench::quick_or(128, 512)},
                        {"microbatch_size", bench::quick_or(32, 64)},
                        {"iterations", iterations}, {"seed", 3}}},
          {"cluster", {{"devices", stages}, {"device", "custom"}, {"memory_gb", 4}, {"tflops", 0.05}}},
          {"pipeline", {{"stages", stages}, {"schedule", "1f1b"}}}};
}

// `inspect` sees the run directory before it is removed.
rt::RunResult run(const JobSpec& job, int threads, const std::string& planner = "",
                  const std::function<void(const std::string&)>& inspect = {}) {
  rt::RunOptions o;
  o.job = job;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = threads;
  o.planner = planner;
  o.run_dir = (std::filesystem::temp_directory_path() / ("pw-bench-" + std::to_string(getpid()))).string();
  auto r = rt::run_job(o);
  if (inspect && r.exit_code == 0) inspect(o.run_dir);
  std::filesystem::remove_all(o.run_dir);
  if (r.exit_code != 0) std::fprintf(stderr, "run failed: %s\n", r.error.c_str());
  return r;
}

// The same training, written as a plain single-process libtorch loop.
double plain_loop_samples_per_s(const JobSpec& job, int threads) {
  at::set_num_threads(threads);
  auto layers = rt::build_layers(job);
  std::vector<at::Tensor> params;
  for (auto& l : layers)
    for (auto& p : l->parameters()) params.push_back(p);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(job.training.lr));
  rt::TrainData data(job);
  int m = job.pipeline.microbatches;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < job.training.iterations; ++it) {
    if (it == 1) t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    for (int k = 0; k < m; ++k) {
      rt::Batch b = data.microbatch(it, k);
      at::Tensor x = b.input;
      for (auto& l : layers) x = l->forward(x);
      (torch::nn::functional::cross_entropy(x, b.target) / m).backward();
    }
    opt.step();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return job.training.batch_size * (job.training.iterations - 1) / s;
}

void memory_policy_effect(int iters) {
  // Workers re-parse the job document, so changes go into it, not the struct.
  nlohmann::json doc = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/demo-fmnist-cnn.json").raw;
  for (const char* a : {"training.batch_size=256", "training.microbatch_size=64"}) apply_override(doc, a);
  JobSpec job = parse_job(doc);
  job.training.iterations = iters;
  const int threads = std::max(1, cores() / 2);
  std::string prof = (std::filesystem::temp_directory_path() / "pw-bench-profile-tight.json").string();
  save_profile_file(rt::measure_profile(job, {bench::quick_or(2, 5), threads}), prof);
  job.model.profile = prof;
  auto peak_of = [](const PreparedJob& p) {
    std::uint64_t peak = 0;
    for (auto& s : p.plan.predicted) peak = std::max(peak, s.peak_memory_bytes);
    return peak;
  };
  std::uint64_t keep = peak_of(prepare_job(job, "uniform")), recompute = peak_of(prepare_job(job, "gpipe"));
  const double budget_gb = (recompute + (keep - recompute) / 2) / double(1ull << 30);
  apply_override(doc, "cluster.memory_gb=" + std::to_string(budget_gb));
  job = parse_job(doc);
  job.training.iterations = iters;
  job.model.profile = prof;
  std::printf("4. tight budget %.1f MiB (all keep needs %.1f, all recompute %.1f)\n",
              job.cluster.device.memory_bytes / 1048576.0, keep / 1048576.0, recompute / 1048576.0);
  double rate[2] = {0, 0};
  const char* planners[2] = {"gpipe", "vpipe"};
  for (int i = 0; i < 2; ++i) {
    try {
      PreparedJob p = prepare_job(job, planners[i]);
      int rec = 0, swp = 0;
      for (auto x : p.plan.policy) rec += x == MemoryPolicy::Recompute, swp += x == MemoryPolicy::Swap;
      auto r = run(job, threads, planners[i]);
      rate[i] = r.exit_code == 0 ? r.samples_per_s : 0;
      std::printf("4. %-6s plan: %zu stages, %d recompute + %d swap of %zu layers, predicted %.1f samples/s: %s %.1f "
                  "samples/s\n",
                  planners[i], p.plan.stages.size(), rec, swp, p.plan.policy.size(), p.plan.throughput_samples_per_s,
                  r.exit_code == 0 ? "ran" : "FAILED", r.samples_per_s);
    } catch (const std::exception& e) {
      std::printf("4. %s: %s\n", planners[i], e.what());
    }
  }
  if (rate[0] > 0 && rate[1] > 0) std::printf("4. memory policy effect: vpipe / gpipe = %.2fx\n", rate[1] / rate[0]);
  std::filesystem::remove(prof);
}
// The same job under 1F1B, ZB-H1 and ZB-V, one after another in this
// process; samples/s of each and the ratios to 1F1B.
void zero_bubble(int iters) {
  const int threads = std::max(1, cores() / 2);
  struct Case {
    const char* label;
    const char* file;
  };
  for (Case c : {Case{"tiny GPT", "tiny-lm-4stage.json"}, Case{"CNN demo", "demo-fmnist-cnn.json"}}) {
    nlohmann::json doc = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/" + c.file).raw;
    for (const char* a : {"pipeline.stages=2", "cluster.devices=2", "data.eval=false"}) apply_override(doc, a);
    double base = 0;
    for (const char* schedule : {"1f1b", "zb-h1", "zb-v"}) {
      nlohmann::json d = doc;
      apply_override(d, std::string("pipeline.schedule=") + schedule);
      rt::RunResult r;
      try {  // e.g. the CNN's 3 layers cannot fill zb-v's 4 virtual stages
        JobSpec job = parse_job(d);
        job.training.iterations = iters;
        r = run(job, threads);
      } catch (const std::exception& e) {
        std::printf("5. %s, %s: %s\n", c.label, schedule, e.what());
        continue;
      }
      if (r.exit_code != 0) continue;
      if (base == 0) base = r.samples_per_s;
      std::printf("5. %s, 2 stages, %-6s %.1f samples/s (%.1f ms/iteration): %.3fx 1F1B\n", c.label, schedule,
                  r.samples_per_s, r.iteration_ms, base > 0 ? r.samples_per_s / base : 0.0);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  int iters = argc > 1 ? std::atoi(argv[1]) : bench::quick_or(3, 12);
  // Optional second argument: the sections to run, e.g. "34" (default all).
  std::string only = argc > 2 ? argv[2] : "12345";
  auto section = [&](char c) { return only.find(c) != std::string::npos; };
  std::printf("pw_bench_runtime (%d cores, %d iterations per run)\n\n", cores(), iters);

  JobSpec one = parse_job(heavy_job(1, iters));
  JobSpec two = parse_job(heavy_job(2, iters));
  if (section('1') || section('2')) {
    double plain = plain_loop_samples_per_s(one, cores());
    auto r1 = run(one, cores());
    std::printf("1. engine overhead: 1-stage run %.1f samples/s vs plain libtorch loop %.1f samples/s: ratio %.3f "
                "(target >= 0.95)\n",
                r1.samples_per_s, plain, r1.samples_per_s / plain);

    auto r2 = run(two, std::max(1, cores() / 2));
    auto r1t = run(one, std::max(1, cores() / 2));
    std::printf("2. pipeline speedup: 2 stages %.1f samples/s vs 1 stage (%d threads) %.1f: %.2fx (target >= 1.6x); "
                "vs 1 stage with %d thread(s) %.1f: %.2fx\n",
                r2.samples_per_s, cores(), r1.samples_per_s, r2.samples_per_s / r1.samples_per_s, cores() / 2,
                r1t.samples_per_s, r2.samples_per_s / r1t.samples_per_s);
  }

  // 3. Measured profile -> plan -> simulator prediction, against a real run.
  if (section('3')) {
    const int worker_threads = std::max(1, cores() / 2);
    rt::LinkProfile link = rt::measure_local_link(256 * 1024);
    std::printf("3. loopback Gloo link (measured): %.2f Gbit/s, %.0f us latency; a send holds its sender %.0f us + "
                "bytes at %.2f Gbit/s\n",
                link.gbps, link.latency_us, link.send_cpu_us, link.send_cpu_gbps);
    // Three predictions of one real run: from the isolated profile and the
    // isolated link; with sends fitted to a probe run of the job (half the
    // measured run's iterations, at least 3);
    // with the probe's compute as well (`pipewright profile --in-situ`).
    auto fidelity = [&](const char* label, JobSpec job, const std::string& prof) {
      ModelProfile isolated = rt::measure_profile(job, {bench::quick_or(2, 10), worker_threads});
      save_profile_file(isolated, prof);
      job.model.profile = prof;
      job.cluster.device.link_gbps = link.gbps;
      job.cluster.device.link_latency_us = link.latency_us;
      job.cluster.device.send_cpu_us = link.send_cpu_us;
      job.cluster.device.send_cpu_gbps = link.send_cpu_gbps;
      const double alone = prepare_job(job).plan.iteration_time_ms;
      rt::LinkProfile in_situ = link;
      std::vector<MeasuredStageCompute> compute;
      JobSpec probe = job;
      probe.training.iterations = std::max<std::int64_t>(3, job.training.iterations / 2);
      double overhead_us = 0;
      run(probe, worker_threads, "", [&](const std::string& dir) {
        in_situ = rt::calibrate_sends(dir, link);
        auto events = read_event_files(dir);
        compute = measure_stage_compute(events);
        overhead_us = fit_action_overhead_us(events).value_or(0);
      });
      job.cluster.device.send_cpu_us = in_situ.send_cpu_us;
      job.cluster.device.send_cpu_gbps = in_situ.send_cpu_gbps;
      std::printf("3. %s: sends in a %lld-iteration probe held their sender %.0f us + bytes at %.2f Gbit/s\n", label,
                  static_cast<long long>(probe.training.iterations), in_situ.send_cpu_us, in_situ.send_cpu_gbps);
      const double sends = prepare_job(job).plan.iteration_time_ms;
      save_profile_file(calibrate_profile(isolated, compute), prof);
      job.cluster.device.action_overhead_us = overhead_us;
      const double both = prepare_job(job).plan.iteration_time_ms;
      std::printf("3. %s: the probe's stages spent %.0f us between actions\n", label, overhead_us);
      // The run's own compute and sends replayed through the simulator: what
      // is left is the schedule's and the links' model, not machine drift
      // between two runs.
      double replayed = 0, replayed_without_overhead = 0;
      auto rm = run(job, worker_threads, "", [&](const std::string& dir) {
        auto events = read_event_files(dir);
        JobSpec self = job;
        if (auto fit = fit_send_cost(events))
          self.cluster.device.send_cpu_us = fit->per_message_us, self.cluster.device.send_cpu_gbps = fit->gbps;
        save_profile_file(calibrate_profile(isolated, measure_stage_compute(events)), prof);
        replayed_without_overhead = prepare_job(self).plan.iteration_time_ms;
        self.cluster.device.action_overhead_us = fit_action_overhead_us(events).value_or(0);
        replayed = prepare_job(self).plan.iteration_time_ms;
      });
      const double meas = rm.iteration_ms;
      auto err = [&](double pred) { return 100 * (pred - meas) / meas; };
      std::printf("3. simulator fidelity, %s: measured %.1f ms/iteration; predicted from the isolated profile %.1f "
                  "(%+.1f%%), with in-situ sends %.1f (%+.1f%%), with in-situ compute, sends and overhead %.1f (%+.1f%%) "
                  "(target within 10%%); the run's own compute, sends and overhead replayed: %.1f (%+.1f%%; "
                  "without the overhead %+.1f%%)\n",
                  label, meas, alone, err(alone), sends, err(sends), both, err(both), replayed, err(replayed),
                  err(replayed_without_overhead));
      return job;
    };
    std::string prof = (std::filesystem::temp_directory_path() / "pw-bench-profile.json").string();
    std::string cnn_prof = (std::filesystem::temp_directory_path() / "pw-bench-profile-cnn.json").string();
    fidelity("balanced MLP, 2 stages 1f1b", two, prof);
    {
      JobSpec cnn = load_job(std::string(PW_SOURCE_DIR) + "/resources/jobs/demo-fmnist-cnn.json");
      cnn.training.iterations = iters;
      fidelity("CNN demo, 2 stages 1f1b", cnn, cnn_prof);
      std::filesystem::remove(cnn_prof);
    }

    std::filesystem::remove(prof);
  }

  // 4. Tight budget: the vpipe plan (keep / swap / recompute per layer) vs
  // the gpipe plan (recompute everything), both run for real. An
  // activation-heavy job: the demo CNN at microbatch 64, where conv
  // activations dwarf the parameters. The budget lies halfway between what
  // all-recompute and all-keep need, so the planners have a real choice.
  if (section('4')) memory_policy_effect(iters);
  if (section('5')) zero_bubble(iters);
  return 0;
}
