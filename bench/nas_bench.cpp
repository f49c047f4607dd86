// pw_bench_nas: simulated supernet training on the Evolved-Transformer
// spaces (24, 48, 96 choices per layer), 4 and 8 stages: utilisation and
// subnets/s of CSP against sequential, GPipe, PipeDream and VPipe-style, as
// ratios to GPipe measured in the same process, plus prefetch
// effectiveness (fraction of candidate uses already resident), subnets in
// flight, and whether a stage's whole supernet slice would fit the device
// (NASPipe's GPipe baseline kept it resident and paid in batch size); then
// Belady against LRU eviction of the candidate cache (`pw_bench_nas N
// eviction`: only that table).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_quick.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "core/nas/supernet_partition.h"
#include "core/spec/job_spec.h"

using namespace pw::nas;

namespace {
pw::JobSpec et_job(int stages, int replication, int subnets, int microbatches, const std::string& partition) {
  nlohmann::json doc = {
      {"name", "et-supernet"},
      {"model",
       {{"kind", "transformer"}, {"encoder_layers", 24}, {"decoder_layers", 24}, {"hidden", 1024}, {"heads", 16},
        {"seq_len", 128}, {"vocab", 32000}}},
      {"search_space",
       {{"builtin", "evolved-transformer"}, {"replication", replication}, {"window", 32}, {"partition", partition}}},
      {"training",
       {{"optimizer", "sgd"}, {"lr", 0.01}, {"batch_size", 32}, {"microbatch_size", 32 / microbatches},
        {"iterations", subnets}, {"seed", 1}}},
      {"cluster", {{"devices", stages}, {"device", "rtx2080ti"}}},
      {"pipeline", {{"stages", stages}, {"schedule", "csp"}}}};
  return pw::parse_job(doc);
}

// The largest stage's share of the supernet: every candidate's weights and
// optimizer state (what a GPipe holding the supernet keeps resident).
double largest_slice_gib(const NasJob& nj) {
  double worst = 0;
  for (const auto& st : nj.stages) {
    double b = 0;
    for (int l = st.first; l <= st.last; ++l)
      for (const auto& c : nj.space.layers[l].candidates) b += c.cost.param_bytes + c.cost.optimizer_bytes;
    worst = std::max(worst, b);
  }
  return worst / (1024.0 * 1024 * 1024);
}

// The largest stage's supernet slice as the device cache holds it.
double largest_slice_resident_bytes(const NasJob& nj) {
  auto slices = supernet_slice_bytes(nj);
  return *std::max_element(slices.begin(), slices.end());
}

double ratio(double a, double b) { return b > 0 ? a / b : (a > 0 ? INFINITY : 1.0); }

// Belady (next use farthest: the subnet sequence is known) against LRU
// eviction of the candidate cache, CSP with 8 microbatches per subnet, at
// the default budget (half the device) and at a third of the stage's
// supernet slice.
void eviction_table(int subnets) {
  std::printf("Eviction: CSP m=8, Belady vs LRU (ratios Belady / LRU; lower loads and stalls are better)\n");
  std::printf("%7s %6s %-12s %9s %9s %6s %9s %9s %6s %10s %10s %6s %7s %7s\n", "choices", "stages", "budget",
              "loads L", "loads B", "B/L", "GiB L", "GiB B", "B/L", "stall L ms", "stall B ms", "B/L", "hit L",
              "hit B");
  for (int stages : {4, 8})
    for (int rep : {1, 2, 4}) {
      NasJob nj = prepare_nas_job(et_job(stages, rep, subnets, 8, "balanced"));
      for (bool third : {false, true}) {
        auto in = supernet_sim_input(nj, SupernetMode::Csp);
        if (third) in.budget_bytes = largest_slice_resident_bytes(nj) / 3;
        in.eviction = Eviction::Lru;
        auto lru = simulate_supernet(in);
        in.eviction = Eviction::Belady;
        auto bel = simulate_supernet(in);
        char budget[32];
        std::snprintf(budget, sizeof budget, "%s %.1fG", third ? "1/3" : "half", in.budget_bytes / (1 << 30));
        std::printf("%7d %6d %-12s %9llu %9llu %6.3f %9.1f %9.1f %6.3f %10.1f %10.1f %6.3f %6.1f%% %6.1f%%\n",
                    24 * rep, stages, budget, static_cast<unsigned long long>(lru.loads),
                    static_cast<unsigned long long>(bel.loads), ratio(bel.loads, lru.loads), lru.load_gib,
                    bel.load_gib, ratio(bel.load_gib, lru.load_gib), lru.load_stall_ms, bel.load_stall_ms,
                    ratio(bel.load_stall_ms, lru.load_stall_ms), 100 * lru.hit_rate(), 100 * bel.hit_rate());
      }
    }
  std::printf("\n");
}

std::string layers_per_stage(const NasJob& nj) {
  std::string s;
  for (const auto& st : nj.stages) s += (s.empty() ? "" : "/") + std::to_string(st.size());
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  int subnets = argc > 1 ? std::atoi(argv[1]) : pw::bench::quick_or(48, 400);
  bool eviction_only = argc > 2 && std::string(argv[2]) == "eviction";
  if (eviction_only) {
    eviction_table(subnets);
    return 0;
  }
  std::printf("pw_bench_nas: %d subnets per run, ET supernet 24+24 layers, hidden 1024, seq 128, batch 32,\n"
              "rtx2080ti (11 GiB, half for candidates), SGD, CSP window 32, prefetch 32 subnets ahead. 'vs gpipe': subnets/s over GPipe with\n"
              "one microbatch per subnet; 'vs gpipe(m)': over GPipe with the same microbatches per subnet (NASPipe's\n"
              "GPipe flushed every p minibatches: m = stages). csp+: CSP on its own partition (search_space.partition\n"
              "csp: boundaries moved while simulated CSP throughput improves); the rest on the balanced partition.\n\n",
              subnets);
  std::printf("%7s %6s %-11s %4s %7s %10s %9s %11s %9s %9s %6s\n", "choices", "stages", "mode", "mb", "util",
              "subnets/s", "vs gpipe", "vs gpipe(m)", "resident", "stall ms", "flight");
  for (int stages : {4, 8})
    for (int rep : {1, 2, 4}) {
      struct Row {
        SupernetMode mode;
        int mb;
        bool own_partition;
      };
      std::map<int, double> gpipe;  // GPipe subnets/s per microbatch count
      std::string csp_layers;
      NasJob first = prepare_nas_job(et_job(stages, rep, subnets, 1, "balanced"));
      for (Row row : {Row{SupernetMode::GPipe, 1, false}, Row{SupernetMode::GPipe, 4, false},
                      Row{SupernetMode::GPipe, 8, false}, Row{SupernetMode::Sequential, 1, false},
                      Row{SupernetMode::PipeDream, 1, false}, Row{SupernetMode::VPipe, 4, false},
                      Row{SupernetMode::VPipe, 8, false}, Row{SupernetMode::Csp, 1, false},
                      Row{SupernetMode::Csp, 4, false}, Row{SupernetMode::Csp, 8, false},
                      Row{SupernetMode::Csp, 8, true}}) {
        NasJob nj = prepare_nas_job(et_job(stages, rep, subnets, row.mb, row.own_partition ? "csp" : "balanced"));
        if (row.own_partition && row.mb == 8) csp_layers = layers_per_stage(nj);
        auto r = simulate_supernet(supernet_sim_input(nj, row.mode));
        if (row.mode == SupernetMode::GPipe) gpipe[row.mb] = r.subnets_per_s;
        double same = gpipe.count(row.mb) ? r.subnets_per_s / gpipe[row.mb] : 0;
        std::string name = std::string(to_string(row.mode)) + (row.own_partition ? "+" : "");
        std::printf("%7d %6d %-11s %4d %7.3f %10.2f %8.2fx %10.2fx %8.1f%% %9.0f %6d%s\n", 24 * rep, stages,
                    name.c_str(), row.mb, r.utilisation, r.subnets_per_s, r.subnets_per_s / gpipe[1], same,
                    100 * r.hit_rate(), r.load_stall_ms, r.max_in_flight, r.reproducible ? "" : "  (not reproducible)");
      }
      double dev = first.job.cluster.device.memory_bytes / (1024.0 * 1024 * 1024);
      double slice = largest_slice_gib(first);
      std::printf("  choice layers per stage: balanced %s, csp+ (m=8) %s; largest stage's supernet slice %.1f GiB "
                  "on a %.1f GiB device: %s\n\n",
                  layers_per_stage(first).c_str(), csp_layers.c_str(), slice, dev,
                  slice < dev ? "a resident GPipe fits (with a smaller batch)" : "cannot be held resident: GPipe swaps");
    }
  eviction_table(subnets);
  return 0;
}
