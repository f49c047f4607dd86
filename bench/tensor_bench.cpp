// Tensor parallelism against published runs (issue 40). Three parts:
//  1. Megatron-LM's weak-scaling table (Narayanan et al., "Efficient
//     Large-Scale Language Model Training on GPU Clusters Using
//     Megatron-LM", SC'21, arXiv 2104.04473, Table 1): every row simulated
//     at its own (t, p, d) and batch with the a100-80g preset and nothing
//     tuned per row (whole layers per stage, full recomputation, the
//     interleaved schedule where p > 1, the best of microbatch 1, 2, 4, 8),
//     its teraFLOP/s per GPU by the paper's own FLOP count beside the
//     published figure; then what our planner chooses for the same GPU
//     count and batch (tensor, stages, replicas, microbatch and per-layer
//     memory policy searched, 1F1B) and its simulated gain.
//  2. Korthikanti et al. ("Reducing Activation Recomputation in Large
//     Transformer Models", arXiv 2205.05198): selective recomputation +
//     sequence parallelism against full recomputation at their 22B, 175B,
//     530B and 1T configurations, our predicted speed-up beside theirs.
//  3. Planning time of a 3072-GPU 1T-parameter job with tensor, stages,
//     replicas and microbatch auto, against the 5 s target, with
//     the search's work counted (vpipe's searches, estimates, simulations),
//     beside one split planned alone.
// Published figures are the papers' (cited at each table); everything else
// is the simulator's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/plan/microbatch_search.h"
#include "core/plan/parallel_search.h"
#include "core/plan/plan_order.h"
#include "core/plan/vpipe_planner.h"
#include "core/spec/job_spec.h"

using namespace pw;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

constexpr int kSeq = 2048;
constexpr int kVocab = 51200;

// Megatron-LM SC'21, Table 1 (A100-80GB, sequence 2048, vocabulary 51200,
// interleaved schedule, recomputation on): parameters (billions), heads,
// hidden, layers, t, p, GPUs, global batch, achieved teraFLOP/s per GPU.
struct MegatronRow {
  double billions;
  int heads, hidden, layers, t, p, gpus, batch;
  double published_tflops;
};
const std::vector<MegatronRow>& megatron_table1() {
  static const std::vector<MegatronRow> rows = {
      {1.7, 24, 2304, 24, 1, 1, 32, 512, 137},         {3.6, 32, 3072, 30, 2, 1, 64, 512, 138},
      {7.5, 32, 4096, 36, 4, 1, 128, 512, 142},        {18.4, 48, 6144, 40, 8, 1, 256, 1024, 135},
      {39.1, 64, 8192, 48, 8, 2, 512, 1536, 138},      {76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140},
      {145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148},   {310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155},
      {529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163}, {1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163},
  };
  return rows;
}

// The paper's FLOPs per iteration with full recomputation (its equation 3):
// 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).
double megatron_flops(double batch, double layers, double hidden) {
  const double s = kSeq, h = hidden, l = layers;
  return 96.0 * batch * s * l * h * h * (1 + s / (6 * h) + kVocab / (16 * l * h));
}

nlohmann::json gpt_job(const std::string& name, int heads, int hidden, int layers, int gpus, int batch) {
  return {{"name", name},
          {"model",
           {{"kind", "gpt"}, {"precision", "fp16"}, {"layers", layers}, {"hidden", hidden}, {"heads", heads},
            {"seq_len", kSeq}, {"vocab", kVocab}}},
          {"training", {{"optimizer", "adam"}, {"batch_size", batch}, {"microbatch_size", 1}}},
          {"cluster", {{"devices", gpus}, {"device", "a100-80g"}}}};
}

// Megatron's partition: each of the V (virtual) stages holds layers / V
// whole transformer layers (an attention and an FFN block each), the
// embedding on the first and the head on the last.
Plan megatron_partition(const ModelProfile& profile, int layers, int virtual_stages) {
  Plan plan = uniform_partition(profile.size(), virtual_stages);
  const int per = layers / virtual_stages;
  for (int j = 0; j < virtual_stages; ++j) {
    plan.stages[j].first_layer = j == 0 ? 0 : 1 + 2 * per * j;
    plan.stages[j].last_layer = j + 1 == virtual_stages ? profile.size() - 1 : 2 * per * (j + 1);
  }
  return plan;
}

// The interleaved schedule's chunks per device: the smallest count above 1
// that splits each stage's layers evenly (Megatron needs whole layers per
// chunk); 1 without a pipeline.
int megatron_chunks(int layers, int p) {
  if (p == 1) return 1;
  const int per = layers / p;
  for (int v = 2; v <= per; ++v)
    if (per % v == 0) return v;
  return 1;
}

// A job pinned to a published configuration and simulated with a plan of
// our own making: Megatron's partition, one policy for every
// layer (the attention blocks' under `attention`, the others' under
// `other`), as Megatron runs it. The iteration in ms, or < 0 when it does
// not fit in memory.
struct Pinned {
  double iteration_ms = -1;
  int microbatch = 0;
  std::string reason;
};
Pinned simulate_pinned(nlohmann::json doc, int t, int p, bool sequence, const std::string& schedule, int chunks,
                       MemoryPolicy attention, MemoryPolicy other, const std::vector<int>& microbatches) {
  Pinned best;
  const int gpus = doc["cluster"]["devices"];
  const int d = gpus / (t * p);
  const int batch = doc["training"]["batch_size"];
  for (int b : microbatches) {
    if ((batch / d) % b != 0) continue;
    const int m = batch / d / b;
    if (schedule == "interleaved" && m % p != 0) continue;
    doc["training"]["microbatch_size"] = b;
    doc["pipeline"] = {{"stages", p}, {"schedule", schedule}, {"chunks", chunks}, {"planner", "uniform"}};
    doc["parallel"] = {{"tensor", t}, {"data", d}, {"sequence", sequence}};
    JobSpec job = parse_job(doc);
    PreparedJob prepared;
    prepared.job = job;
    prepared.profile = job_profile(job);
    prepared.plan = megatron_partition(prepared.profile, job.model.layers, p * chunks);
    for (int l = 0; l < prepared.profile.size(); ++l)
      prepared.plan.policy[l] = prepared.profile.layers[l].type == "attention" ? attention : other;
    prepared.plan.data_parallel = d;
    prepared.plan.tensor_parallel = t;
    prepared.schedule = make_plan_schedule(job.pipeline.schedule, p, job.pipeline.microbatches, chunks, prepared.plan);
    SimResult r = simulate(prepared.sim_input());
    if (!r.feasible) {
      best.reason = r.reason;
      continue;
    }
    if (best.iteration_ms < 0 || r.iteration_time_ms < best.iteration_ms) {
      best.iteration_ms = r.iteration_time_ms;
      best.microbatch = b;
    }
  }
  return best;
}

void megatron_weak_scaling() {
  std::printf("Megatron-LM SC'21 Table 1 (weak scaling, A100-80GB): published configuration simulated with the\n"
              "a100-80g preset (effective %.1f TF/s = 45%% of 312), whole layers per stage (Megatron's partition),\n"
              "full recomputation, interleaved where p > 1 (the fewest chunks v > 1 splitting a stage's layers\n"
              "evenly), best of microbatch 1/2/4/8; TF/s per GPU by the paper's FLOP count\n\n",
              device_preset("a100-80g")->tflops);
  std::printf("  params     t   p     d   v  GPUs  batch  mb   iteration s   predicted TF/s  published  deviation\n");
  double worst = 0;
  std::string worst_row;
  const auto& rows = megatron_table1();
  const std::size_t count = bench::quick() ? 3 : rows.size();
  for (std::size_t i = 0; i < count; ++i) {
    const MegatronRow& r = rows[i];
    const int d = r.gpus / (r.t * r.p);
    auto doc = gpt_job("megatron-" + std::to_string(r.billions), r.heads, r.hidden, r.layers, r.gpus, r.batch);
    const int v = megatron_chunks(r.layers, r.p);
    Pinned pin = simulate_pinned(doc, r.t, r.p, false, v > 1 ? "interleaved" : "1f1b", v,
                                 MemoryPolicy::Recompute, MemoryPolicy::Recompute, {1, 2, 4, 8});
    if (pin.iteration_ms < 0) {
      std::printf("  %6.1fB  %2d  %2d  %4d  %4d  %5d   -   does not fit: %s\n", r.billions, r.t, r.p, d, r.gpus, r.batch,
                  pin.reason.c_str());
      continue;
    }
    const double tflops = megatron_flops(r.batch, r.layers, r.hidden) / (pin.iteration_ms * 1e-3) / r.gpus / 1e12;
    const double dev = tflops / r.published_tflops - 1;
    if (std::fabs(dev) > std::fabs(worst)) {
      worst = dev;
      char b[64];
      std::snprintf(b, sizeof b, "%.1fB", r.billions);
      worst_row = b;
    }
    std::printf("  %6.1fB  %2d  %2d  %4d  %2d  %4d  %5d  %2d  %12.2f  %15.1f  %9.0f  %+8.1f%%\n", r.billions, r.t, r.p, d,
                v, r.gpus, r.batch, pin.microbatch, pin.iteration_ms / 1e3, tflops, r.published_tflops, 100 * dev);
  }
  std::printf("  worst deviation: %+.1f%% (%s)\n\n", 100 * worst, worst_row.c_str());

  std::printf("Our planner at the same GPU count and batch (tensor, stages, replicas, microbatch auto; vpipe,\n"
              "1F1B, per-layer keep/recompute/swap), simulated; gain = the published configuration's iteration /\n"
              "the choice's\n\n");
  std::printf("  params   choice (t x p x d, mb, schedule)       planned in   iteration s   TF/s per GPU   gain\n");
  const std::size_t plan_count = bench::quick() ? 2 : rows.size();
  for (std::size_t i = 0; i < plan_count; ++i) {
    const MegatronRow& r = rows[i];
    const int d = r.gpus / (r.t * r.p);
    auto doc = gpt_job("megatron-auto", r.heads, r.hidden, r.layers, r.gpus, r.batch);
    const int v = megatron_chunks(r.layers, r.p);
    Pinned pin = simulate_pinned(doc, r.t, r.p, false, v > 1 ? "interleaved" : "1f1b", v,
                                 MemoryPolicy::Recompute, MemoryPolicy::Recompute, {1, 2, 4, 8});
    doc["training"]["microbatch_size"] = "auto";
    doc["pipeline"] = {{"schedule", "1f1b"}, {"planner", "vpipe"}};
    doc["parallel"] = {{"tensor", "auto"}};
    auto t0 = std::chrono::steady_clock::now();
    PreparedJob p = prepare_job(parse_job(doc));
    const double planned_s = seconds_since(t0);
    SimResult sim = simulate(p.sim_input());
    char choice[96];
    std::snprintf(choice, sizeof choice, "%d x %d x %d, mb %d, %s", p.job.parallel.tensor, p.job.pipeline.stages,
                  p.job.parallel.data, p.job.training.microbatch_size, to_string(p.job.pipeline.schedule).c_str());
    const double tflops = megatron_flops(r.batch, r.layers, r.hidden) / (sim.iteration_time_ms * 1e-3) / r.gpus / 1e12;
    std::printf("  %6.1fB  %-38s %8.2f s  %12.2f  %13.1f   %s\n", r.billions, choice, planned_s,
                sim.iteration_time_ms / 1e3, tflops,
                pin.iteration_ms > 0 && sim.feasible
                    ? (std::string("x") + std::to_string(pin.iteration_ms / sim.iteration_time_ms).substr(0, 5)).c_str()
                    : sim.feasible ? "(published does not fit)" : "infeasible");
    (void)d;
  }
  std::printf("\n");
}

// Korthikanti et al. 2022, Table 3 (configurations) and Table 5 (end to
// end): t = 8, sequence 2048, microbatch 1; the published speed-up of
// selective recomputation + sequence parallelism over full recomputation.
struct KorthikantiRow {
  const char* name;
  int heads, hidden, layers, t, p, gpus, batch;
  double published_speedup;
};

void korthikanti() {
  // Speed-ups as Table 5 of arXiv 2205.05198 states them (29.0, 31.8,
  // 29.7, 32.1 %); ../shared/REFERENCE.md gives their range, 29-32 %.
  const std::vector<KorthikantiRow> rows = {
      {"22B", 64, 6144, 48, 8, 1, 8, 4, 0.290},
      {"175B", 96, 12288, 96, 8, 8, 64, 64, 0.318},
      {"530B", 128, 20480, 105, 8, 35, 280, 280, 0.297},
      {"1T", 160, 25600, 128, 8, 64, 512, 512, 0.321},
  };
  std::printf("Korthikanti et al. 2022: selective recomputation + sequence parallelism vs full recomputation\n"
              "(t = 8, microbatch 1, 1F1B, whole layers per stage, a100-80g preset)\n\n");
  std::printf("  model   t   p  GPUs  batch   full recompute s   selective + sp s   predicted   published\n");
  const std::size_t count = bench::quick() ? 1 : rows.size();
  for (std::size_t i = 0; i < count; ++i) {
    const auto& r = rows[i];
    auto doc = gpt_job(r.name, r.heads, r.hidden, r.layers, r.gpus, r.batch);
    Pinned full = simulate_pinned(doc, r.t, r.p, false, "1f1b", 1, MemoryPolicy::Recompute, MemoryPolicy::Recompute, {1});
    Pinned sel = simulate_pinned(doc, r.t, r.p, true, "1f1b", 1, MemoryPolicy::Selective, MemoryPolicy::Keep, {1});
    if (full.iteration_ms < 0 || sel.iteration_ms < 0) {
      std::printf("  %-5s  %2d  %2d  %4d  %5d   does not fit: %s\n", r.name, r.t, r.p, r.gpus, r.batch,
                  (full.iteration_ms < 0 ? full.reason : sel.reason).c_str());
      continue;
    }
    std::printf("  %-5s  %2d  %2d  %4d  %5d  %17.2f  %17.2f  %+9.1f%%  %+9.1f%%\n", r.name, r.t, r.p, r.gpus, r.batch,
                full.iteration_ms / 1e3, sel.iteration_ms / 1e3, 100 * (full.iteration_ms / sel.iteration_ms - 1),
                100 * r.published_speedup);
  }
  std::printf("\n");
}

void planning_time() {
  const MegatronRow& r = megatron_table1().back();  // 1T on 3072 GPUs
  const int layers = bench::quick_or(32, r.layers);
  auto doc = gpt_job("1t-auto", r.heads, r.hidden, layers, r.gpus, r.batch);
  doc["training"]["microbatch_size"] = "auto";
  doc["pipeline"] = {{"schedule", "1f1b"}, {"planner", "vpipe"}};
  doc["parallel"] = {{"tensor", "auto"}};
  const VPipeWork before = vpipe_work();
  auto t0 = std::chrono::steady_clock::now();
  PreparedJob searched = prepare_job(parse_job(doc));
  const double search_s = seconds_since(t0);
  const VPipeWork after = vpipe_work();  // a copy: the split planned alone below counts too
  std::size_t sizes = 0, planned = 0;
  for (const auto& row : searched.plan.parallel_search)
    if (row.reason.rfind("not planned", 0) != 0) ++planned;
  {
    const JobSpec at = parse_job(doc);
    for (const ParallelSplit& s : parallel_splits(at, static_cast<int>(job_profile(at).size()))) {
      JobSpec one = at;
      resolve_parallel(one, s.stages, s.data, s.tensor);
      sizes += microbatch_candidates(one).size();
    }
  }
  auto fixed = doc;
  fixed["pipeline"]["stages"] = searched.job.pipeline.stages;
  fixed["parallel"] = {{"tensor", searched.job.parallel.tensor}, {"data", searched.job.parallel.data}};
  t0 = std::chrono::steady_clock::now();
  prepare_job(parse_job(fixed));
  const double one_s = seconds_since(t0);
  std::printf("planner: 1T-parameter GPT (%d layers) on %d x a100-80g, batch %d, tensor/stages/replicas/microbatch "
              "auto (vpipe, 1f1b)\n",
              layers, r.gpus, r.batch);
  constexpr double kTargetS = 5.0;  // issue 40
  std::printf("  search            %.3f s   (%.2f x the %.0f s target; chose %d x %d x %d, microbatch %d)\n", search_s,
              search_s / kTargetS, kTargetS, searched.job.parallel.tensor, searched.job.pipeline.stages,
              searched.job.parallel.data, searched.job.training.microbatch_size);
  std::printf("  work              %zu splits (%zu planned, the rest bounded out), %zu (split, microbatch) candidates:\n"
              "                    %lld vpipe searches, %lld estimates (%.3g stage estimates, %.3g in the climbs),\n"
              "                    %lld simulations inside the searches\n",
              searched.plan.parallel_search.size(), planned, sizes,
              static_cast<long long>(after.searches - before.searches),
              static_cast<long long>(after.estimates - before.estimates),
              static_cast<double>(after.stage_estimates - before.stage_estimates),
              static_cast<double>(after.climb_stage_estimates - before.climb_stage_estimates),
              static_cast<long long>(after.simulations - before.simulations));
  std::printf("  one split alone   %.3f s   (ratio %.2fx)\n", one_s, search_s / one_s);

  // GPT-3 175B's shape on 4096 A100s (pw_bench_parallel's job): tensor
  // auto against the best split without tensor parallelism.
  const int devices = bench::quick_or(512, 4096);
  const int gpt3_layers = bench::quick_or(24, 96);
  auto gpt3 = gpt_job("gpt3-like", 96, 12288, gpt3_layers, devices, 1536);
  gpt3["training"]["microbatch_size"] = "auto";
  gpt3["pipeline"] = {{"schedule", "1f1b"}, {"planner", "vpipe"}};
  gpt3["parallel"] = {{"tensor", "auto"}};
  t0 = std::chrono::steady_clock::now();
  PreparedJob with_t = prepare_job(parse_job(gpt3));
  const double with_s = seconds_since(t0);
  gpt3["pipeline"]["stages"] = "auto";
  gpt3["parallel"] = {{"data", "auto"}};
  PreparedJob without_t = prepare_job(parse_job(gpt3));
  std::printf("\nplanner: GPT-3-like (%d layers) on %d x a100-80g, batch 1536, microbatch auto (vpipe, 1f1b)\n",
              gpt3_layers, devices);
  std::printf("  tensor auto       %d x %d x %d, microbatch %d: %.2f s per iteration, %.1f samples/s; planned in %.3f s "
              "(target < 2 s)\n",
              with_t.job.parallel.tensor, with_t.job.pipeline.stages, with_t.job.parallel.data,
              with_t.job.training.microbatch_size, with_t.plan.iteration_time_ms / 1e3,
              with_t.plan.throughput_samples_per_s, with_s);
  std::printf("  tensor 1          1 x %d x %d, microbatch %d: %.2f s per iteration, %.1f samples/s (x%.2f with tensor)\n",
              without_t.job.pipeline.stages, without_t.job.parallel.data, without_t.job.training.microbatch_size,
              without_t.plan.iteration_time_ms / 1e3, without_t.plan.throughput_samples_per_s,
              without_t.plan.iteration_time_ms / with_t.plan.iteration_time_ms);
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is made: the large rows take seconds
  megatron_weak_scaling();
  korthikanti();
  planning_time();
  return 0;
}
