// pw_bench_nas: simulated supernet training on the Evolved-Transformer
// spaces (24, 48, 96 choices per layer), 4 and 8 stages: utilisation and
// subnets/s of CSP against sequential, GPipe, PipeDream and VPipe-style, as
// ratios to GPipe measured in the same process, plus prefetch
// effectiveness (fraction of candidate uses already resident).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/nas/nas_job.h"
#include "core/spec/job_spec.h"

using namespace pw::nas;

namespace {
pw::JobSpec et_job(int stages, int replication, int subnets, int microbatches) {
  nlohmann::json doc = {
      {"name", "et-supernet"},
      {"model",
       {{"kind", "transformer"}, {"encoder_layers", 24}, {"decoder_layers", 24}, {"hidden", 1024}, {"heads", 16},
        {"seq_len", 128}, {"vocab", 32000}}},
      {"search_space", {{"builtin", "evolved-transformer"}, {"replication", replication}, {"window", 32}}},
      {"training",
       {{"optimizer", "sgd"}, {"lr", 0.01}, {"batch_size", 32}, {"microbatch_size", 32 / microbatches},
        {"iterations", subnets}, {"seed", 1}}},
      {"cluster", {{"devices", stages}, {"device", "rtx2080ti"}}},
      {"pipeline", {{"stages", stages}, {"schedule", "csp"}}}};
  return pw::parse_job(doc);
}
}  // namespace

int main(int argc, char** argv) {
  int subnets = argc > 1 ? std::atoi(argv[1]) : 400;
  std::printf("pw_bench_nas: %d subnets per run, ET supernet 24+24 layers, hidden 1024, seq 128, batch 32,\n"
              "rtx2080ti (11 GiB, half for candidates), SGD, CSP window 32. 'vs gpipe': subnets/s over GPipe with\n"
              "one microbatch per subnet; 'vs gpipe(m)': over GPipe with the same microbatches per subnet.\n\n",
              subnets);
  std::printf("%7s %6s %-11s %4s %7s %10s %9s %11s %9s %9s\n", "choices", "stages", "mode", "mb", "util", "subnets/s",
              "vs gpipe", "vs gpipe(m)", "resident", "stall ms");
  for (int stages : {4, 8})
    for (int rep : {1, 2, 4}) {
      struct Row {
        SupernetMode mode;
        int mb;
      };
      std::map<int, double> gpipe;  // GPipe subnets/s per microbatch count
      for (Row row : {Row{SupernetMode::GPipe, 1}, Row{SupernetMode::GPipe, 4}, Row{SupernetMode::GPipe, 8},
                      Row{SupernetMode::Sequential, 1}, Row{SupernetMode::PipeDream, 1}, Row{SupernetMode::VPipe, 4},
                      Row{SupernetMode::VPipe, 8}, Row{SupernetMode::Csp, 1}, Row{SupernetMode::Csp, 4},
                      Row{SupernetMode::Csp, 8}}) {
        NasJob nj = prepare_nas_job(et_job(stages, rep, subnets, row.mb));
        auto r = simulate_supernet(supernet_sim_input(nj, row.mode));
        if (row.mode == SupernetMode::GPipe) gpipe[row.mb] = r.subnets_per_s;
        double same = gpipe.count(row.mb) ? r.subnets_per_s / gpipe[row.mb] : 0;
        std::printf("%7d %6d %-11s %4d %7.3f %10.2f %8.2fx %10.2fx %8.1f%% %9.0f%s\n", 24 * rep, stages,
                    to_string(row.mode), row.mb, r.utilisation, r.subnets_per_s, r.subnets_per_s / gpipe[1], same,
                    100 * r.hit_rate(), r.load_stall_ms, r.reproducible ? "" : "  (not reproducible)");
      }
      std::printf("\n");
    }
  return 0;
}
