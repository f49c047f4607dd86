// pw_bench_migration: (1) the stall of a live migration against the
// stop-the-world baseline (checkpoint, stop the workers, re-partition the
// checkpoint, restart, resume), both moving the same layers at the same
// iteration; (2) the throughput timeline of a run whose stage 1 becomes 3x
// slower: static plan vs online replanning.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/io/checkpoint_index.h"
#include "core/plan/plan.h"
#include "core/spec/job_spec.h"
#include "runtime/coordinator.h"
#include "runtime/migration/repartition.h"
#include "runtime/stage.h"

using namespace pw;
using namespace pw::rt;
namespace fs = std::filesystem;

namespace {

constexpr int kLayers = 6;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

nlohmann::json job(int iterations) {
  std::vector<int> widths(kLayers - 1, 384);
  return {{"name", "bench-migration"},
          {"model", {{"kind", "mlp"}, {"input", 384}, {"widths", widths}, {"classes", 5}, {"precision", "fp32"}}},
          {"data", {{"kind", "synthetic"}, {"samples", 384}}},
          {"training",
           {{"optimizer", "adam"}, {"lr", 0.001}, {"batch_size", 192}, {"microbatch_size", 48},
            {"iterations", iterations}, {"seed", 3}}},
          {"cluster", {{"devices", 2}, {"device", "custom"}, {"memory_gb", 4}, {"tflops", 0.05}}},
          {"pipeline", {{"stages", 2}, {"schedule", "1f1b"}}},
          {"runtime", nlohmann::json::object()}};
}

Plan cut_after(int cut) {
  Plan p = uniform_partition(kLayers, 2);
  p.stages = {{0, cut}, {cut + 1, kLayers - 1}};
  return p;
}

std::string tmp(const std::string& n) {
  auto d = fs::temp_directory_path() / ("pw-bench-mig-" + n + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  return d.string();
}

RunResult run(const nlohmann::json& doc, const Plan& plan, const std::string& dir, int ckpt = 0,
              const std::string& resume = "") {
  RunOptions o;
  o.job = parse_job(doc);
  o.plan = plan;
  o.run_dir = dir;
  o.worker_binary = PW_WORKER_BIN;
  o.threads_per_worker = 1;
  o.checkpoint_every = ckpt;
  o.resume_dir = resume;
  RunResult r = run_job(o);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "run failed: %s\n", r.error.c_str());
    std::exit(1);
  }
  return r;
}

nlohmann::json report(const std::string& dir) {
  std::ifstream in(dir + "/migration.json");
  return nlohmann::json::parse(in);
}

double mean_ms(const nlohmann::json& t, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += t[i]["iter_ms"].get<double>();
  return s / static_cast<double>(to - from);
}

bool same_weights(const std::string& a, const std::string& b) {
  for (int s = 0; s < 2; ++s) {
    auto x = load_stage_parameters(a + "/weights/stage" + std::to_string(s) + ".pt");
    auto y = load_stage_parameters(b + "/weights/stage" + std::to_string(s) + ".pt");
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!x[i].equal(y[i])) return false;
  }
  return true;
}

void stall_benchmark() {
  const int n = bench::quick_or(8, 12), k = bench::quick_or(4, 6);
  // From an unbalanced split (1 layer | 5) to the balanced one (3 | 3), so
  // the move pays for itself (the slower stage goes from 5 layers to 3): the
  // bench reports iteration time before and after it. (Moving a layer off a
  // balanced split, as it once did, made the run 14% slower.)
  const Plan a = cut_after(0), b = cut_after(2);
  // Live: layers 1-2 move from stage 1 to stage 0 before iteration k.
  auto doc = job(n);
  doc["runtime"]["migrate"] = {{{"iteration", k}, {"stages", {{0, 2}, {3, kLayers - 1}}}}};
  std::string live = tmp("live");
  run(doc, a, live);
  auto rep = report(live);
  const auto& ev = rep["migrations"].at(0);
  double live_stall = ev["stall_ms"].get<double>();
  double iter = mean_ms(rep["timeline"], 1, rep["timeline"].size());
  // The migration iteration itself carries the stall: left out of both sides.
  double before = mean_ms(rep["timeline"], 1, k), after = mean_ms(rep["timeline"], k + 1, rep["timeline"].size());

  // Stop-the-world: run to k with a checkpoint, re-partition it, resume on plan b.
  std::string first = tmp("stw1"), moved = tmp("stw-moved"), second = tmp("stw2");
  run(job(k), a, first, k);
  std::int64_t stopped = now_ns();
  double last_end = report(first)["timeline"].back()["t_ns"].get<double>();
  // meta.json names the complete checkpoint's folder (checkpoint/<iteration>).
  std::string ckpt_dir;
  std::int64_t position = 0;
  {
    std::ifstream meta(first + "/checkpoint/meta.json");
    auto m = nlohmann::json::parse(meta);
    ckpt_dir = m.at("dir").get<std::string>();
    position = m.at("iteration").get<std::int64_t>();
  }
  migration::repartition_checkpoint(parse_job(job(n)), a, b, first + "/" + ckpt_dir, moved + "/" + ckpt_dir);
  // The moved checkpoint is a new one: the partition its files follow and
  // its own index (sizes and digests of what repartitioning wrote), as the
  // coordinator writes them, so that the resume checks it like any other.
  {
    std::ofstream plan_out(moved + "/" + ckpt_dir + "/plan.json");
    plan_out << to_json(b).dump();
  }
  std::vector<std::string> files{"plan.json"};
  for (std::size_t s = 0; s < b.stages.size(); ++s) files.push_back("stage" + std::to_string(s) + ".pt");
  write_checkpoint_index(moved, "iteration", position, files);
  std::int64_t restart = now_ns();
  run(job(n), b, second, 0, moved);
  auto t2 = report(second)["timeline"];
  double first_start = t2[0]["t_ns"].get<double>() - t2[0]["iter_ms"].get<double>() * 1e6;
  double stw = ((stopped - last_end) + (restart - stopped) + (first_start - restart)) * 1e-6;

  std::printf("== live migration vs stop-the-world (2 stages, layers 1-2 move 1 -> 0 before iteration %d) ==\n", k);
  std::printf("iteration time                 %8.1f ms  (before the move %.1f, after %.1f: %+.0f%%)\n", iter, before, after,
              (after / before - 1) * 100);
  std::printf("live stall                     %8.1f ms  (%.2f iterations; %lld bytes moved)\n", live_stall,
              live_stall / iter, static_cast<long long>(ev["bytes"].get<std::int64_t>()));
  std::printf("stop-the-world stall           %8.1f ms  (%.2f iterations: stop %.0f, re-partition %.0f, restart %.0f)\n",
              stw, stw / iter, (stopped - last_end) * 1e-6, (restart - stopped) * 1e-6, (first_start - restart) * 1e-6);
  std::printf("stop-the-world / live          %8.1fx   (target >= 10x; live <= 1 iteration: %s)\n", stw / live_stall,
              live_stall <= iter ? "yes" : "no");
  std::printf("same final weights             %s\n\n", same_weights(live, second) ? "yes (bitwise)" : "NO");
  for (auto& d : {live, first, moved, second}) fs::remove_all(d);
}

void timeline_benchmark() {
  // Quick: enough iterations for the replan (slowdown at 4, 2 sustained
  // iterations, 3 measured) and the last 8 after it.
  const int n = bench::quick_or(18, 30), from = 4;
  auto doc = job(n);
  doc["runtime"]["slowdown"] = {1, 3};
  doc["runtime"]["slowdown_from"] = from;
  std::string fixed_dir = tmp("static"), online_dir = tmp("online");
  run(doc, cut_after(2), fixed_dir);
  doc["runtime"]["replan"] = {{"enabled", true}};
  run(doc, cut_after(2), online_dir);
  auto fixed = report(fixed_dir), online = report(online_dir);
  const auto& tf = fixed["timeline"];
  const auto& to = online["timeline"];
  std::printf("== throughput timeline: stage 1 becomes 3x slower at iteration %d ==\n", from);
  std::printf("%4s %14s %14s\n", "it", "static samp/s", "online samp/s");
  for (size_t i = 0; i < tf.size() && i < to.size(); ++i)
    std::printf("%4zu %14.0f %14.0f\n", i, 192e3 / tf[i]["iter_ms"].get<double>(), 192e3 / to[i]["iter_ms"].get<double>());
  for (const auto& e : online["migrations"])
    std::printf("migration v%d at iteration %lld (%s): %s, stall %.1f ms, predicted gain %s, measured gain %s\n",
                e["version"].get<int>(), static_cast<long long>(e["iteration"].get<std::int64_t>()),
                e["reason"].get<std::string>().c_str(), e["to"].dump().c_str(), e["stall_ms"].get<double>(),
                e["predicted_gain"].dump().c_str(), e["measured_gain"].dump().c_str());
  size_t tail = std::min(tf.size(), to.size());
  double s = mean_ms(tf, tail - 8, tail), o = mean_ms(to, tail - 8, tail);
  std::printf("after recovery (last 8 iterations): static %.1f ms, online %.1f ms -> online / static throughput %.2fx\n",
              s, o, s / o);
  fs::remove_all(fixed_dir);
  fs::remove_all(online_dir);
}

}  // namespace

int main() {
  stall_benchmark();
  timeline_benchmark();
  return 0;
}
