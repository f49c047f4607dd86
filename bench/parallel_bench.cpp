// Data parallelism at scale (issue 39): how fast the planner searches the
// (stages, replicas) split of thousands of devices, how fast one iteration
// of a pp 16 x dp 256 job simulates, and the GPT-3-like plan tables of
// docs/planners.md ("Stages and replicas"). Each time is printed beside a
// baseline run in the same process: planning one split alone, and
// simulating the same pipeline with one replica.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/spec/job_spec.h"

using namespace pw;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GPT-3 175B's shape (Brown et al. 2020: 96 layers, hidden 12288, 96 heads,
// 2048 tokens) at Megatron-LM's global batch of 1536, on A100 80 GB.
nlohmann::json gpt3(int devices, int layers) {
  return {{"name", "gpt3-like"},
          {"model",
           {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", layers}, {"hidden", 12288}, {"heads", 96},
            {"seq_len", 2048}, {"vocab", 51200}}},
          {"training", {{"optimizer", "adam"}, {"batch_size", 1536}, {"microbatch_size", "auto"}}},
          {"cluster", {{"devices", devices}, {"device", "a100-80g"}}},
          {"pipeline", {{"stages", "auto"}, {"schedule", "1f1b"}, {"planner", "vpipe"}}},
          {"parallel", {{"data", "auto"}}}};
}

template <class F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void plan_table(int devices, int layers) {
  PreparedJob p = prepare_job(parse_job(gpt3(devices, layers)));
  std::printf("\nGPT-3-like (%d layers) on %d x a100-80g, batch 1536: stages x replicas auto\n", layers, devices);
  std::printf("  stages  replicas  microbatch   iteration ms   samples/s   sync exposed ms   feasible\n");
  for (const auto& r : p.plan.parallel_search) {
    const bool planned = r.iteration_time_ms > 0;
    const bool chosen = r.stages == p.job.pipeline.stages && r.replicas == p.job.parallel.data;
    char mb[32] = "-", it[32] = "-", sps[32] = "-", sync[32] = "-";
    if (planned) {
      std::snprintf(mb, sizeof mb, "%d x %d", r.microbatch_size, r.microbatches);
      std::snprintf(it, sizeof it, "%.1f", r.iteration_time_ms);
      std::snprintf(sps, sizeof sps, "%.1f", r.throughput_samples_per_s);
      std::snprintf(sync, sizeof sync, "%.1f", r.sync_exposed_ms);
    }
    std::printf("  %6d  %8d  %10s  %13s  %10s  %16s   %s%s\n", r.stages, r.replicas, mb, it, sps, sync,
                r.feasible ? "yes" : planned ? "no (memory)" : "not planned (bound)", chosen ? "   <- chosen" : "");
  }
  std::printf("  choice: %d stages x %d replicas, microbatch %d, %.1f samples/s, planned in %.0f ms\n",
              p.job.pipeline.stages, p.job.parallel.data, p.job.training.microbatch_size,
              p.plan.throughput_samples_per_s, p.plan.planning_time_ms);
}

}  // namespace

int main() {
  const int layers = bench::quick_or(24, 96);
  const int devices = bench::quick_or(512, 4096);
  const int reps = bench::quick_or(1, 3);

  // Planning: the whole search against one split planned alone.
  JobSpec searched = parse_job(gpt3(devices, layers));
  PreparedJob chosen = prepare_job(searched);
  auto fixed_doc = gpt3(devices, layers);
  fixed_doc["pipeline"]["stages"] = chosen.job.pipeline.stages;
  fixed_doc["parallel"]["data"] = chosen.job.parallel.data;
  JobSpec fixed = parse_job(fixed_doc);
  const double search_s = median_seconds(reps, [&] { prepare_job(searched); });
  const double one_s = median_seconds(reps, [&] { prepare_job(fixed); });
  std::printf("planner: GPT-3-like, %d layers, %d devices, stages x replicas auto, microbatch auto (vpipe)\n", layers,
              devices);
  std::printf("  search             %.3f s   (target < 2 s; %zu splits)\n", search_s, chosen.plan.parallel_search.size());
  std::printf("  one split alone    %.3f s   (ratio search / one split %.2fx)\n", one_s, search_s / one_s);

  // Simulation: pp 16 x dp 256 against the same pipeline with one replica.
  const int microbatches = bench::quick_or(128, 1024);
  auto sim_doc = gpt3(16 * 256, layers);
  sim_doc["training"]["microbatch_size"] = 1;
  sim_doc["training"]["batch_size"] = 256 * microbatches;
  sim_doc["pipeline"] = {{"stages", 16}, {"schedule", "1f1b"}, {"planner", "uniform"}};
  sim_doc["parallel"] = {{"data", 256}};
  PreparedJob dp = prepare_job(parse_job(sim_doc));
  sim_doc["parallel"] = {{"data", 1}};
  sim_doc["training"]["batch_size"] = microbatches;
  sim_doc["cluster"]["devices"] = 16;
  PreparedJob pp = prepare_job(parse_job(sim_doc));
  SimResult r;
  const double dp_s = median_seconds(reps, [&] { r = simulate(dp.sim_input()); });
  const double pp_s = median_seconds(reps, [&] { simulate(pp.sim_input()); });
  std::printf("\nsimulator: pp 16 x dp 256 (%d devices), %d microbatches per replica, 1F1B\n", 16 * 256, microbatches);
  std::printf("  simulate           %.3f s   (target < 1 s; %llu events)\n", dp_s,
              static_cast<unsigned long long>(r.events));
  std::printf("  pipeline alone     %.3f s   (ratio with replicas / without %.2fx)\n", pp_s, dp_s / pp_s);
  double sync = 0, exposed = 0;
  for (const auto& s : r.stages) {
    sync = std::max(sync, s.sync_ms);
    exposed = std::max(exposed, s.sync_exposed_ms);
  }
  std::printf("  iteration %.1f ms, %.1f samples/s, all-reduce %.1f ms per stage (%.1f ms exposed)\n",
              r.iteration_time_ms, r.throughput_samples_per_s, sync, exposed);

  for (int n : {64, 512, 4096})
    if (!bench::quick() || n <= 512) plan_table(n, layers);
  return 0;
}
