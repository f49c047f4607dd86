// The CSP trainer with its device cache at a third of each stage's supernet
// slice against the same run holding everything (the baseline, same
// process, same job): subnets/s ratio, and the cache's hit rate, loads and
// stalls measured against the simulator's prediction (predict_device_cache).
//   pw_bench_nas_cache [SUBNETS=60] [OPTIMIZER=adam]
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "runtime/nas/csp_launch.h"

using namespace pw;

namespace {
const std::string kJob = std::string(PW_SOURCE_DIR) + "/resources/jobs/fmnist-supernet.json";

rt::nas::CspRunResult run(const std::vector<std::string>& sets, const std::string& tag) {
  rt::nas::CspLaunch l;
  l.worker_binary = PW_NAS_WORKER_BIN;
  l.job_file = kJob;
  l.overrides = sets;
  l.workers = 2;
  l.out_dir = (std::filesystem::temp_directory_path() / ("pw-bench-nas-cache-" + std::to_string(getpid()) + tag)).string();
  auto r = rt::nas::launch_csp_run(l);
  std::filesystem::remove_all(l.out_dir);
  return r;
}
}  // namespace

int main(int argc, char** argv) {
  const int subnets = argc > 1 ? std::stoi(argv[1]) : bench::quick_or(16, 60);
  const std::string opt = argc > 2 ? argv[2] : "adam";
  // 11 candidates a layer (conv 3 / 5 at five widths, identity), 2 layers a
  // stage: a third of a slice still holds the largest subnet beside the head.
  std::vector<std::string> sets = {"training.iterations=" + std::to_string(subnets),
                                   "data.train_samples=" + std::to_string(32 * subnets), "search_space.kernels=[3,5]",
                                   "search_space.widths=[8,12,16,20,24]", "training.optimizer=" + opt,
                                   "training.lr=0.01"};
  auto prep = [](std::vector<std::string> s) {
    s.insert(s.end(), {"pipeline.stages=2", "cluster.devices=2"});
    return nas::prepare_nas_job(load_job(kJob, s));
  };
  auto slice = nas::supernet_slice_bytes(prep(sets));
  char budget[64];
  std::snprintf(budget, sizeof budget, "%.17g", std::max(slice[0], slice[1]) / 3 / (1024.0 * 1024 * 1024));
  auto limited_sets = sets;
  limited_sets.push_back(std::string("search_space.device_budget_gb=") + budget);
  auto predicted = nas::predict_device_cache(prep(limited_sets));

  std::printf("fmnist supernet, 2 CSP workers, %d subnets, %s; slice %.2f MiB per stage, budget a third (%.3f MiB)\n",
              subnets, opt.c_str(), slice[0] / (1024.0 * 1024), std::max(slice[0], slice[1]) / 3 / (1024.0 * 1024));
  auto full = run(sets, "full");
  auto third = run(limited_sets, "third");
  std::printf("  subnets/s: everything resident %.2f, a third %.2f: ratio %.3f; weights %s\n", full.subnets_per_s(),
              third.subnets_per_s(), full.subnets_per_s() > 0 ? third.subnets_per_s() / full.subnets_per_s() : 0,
              full.stage_hashes == third.stage_hashes ? "bitwise equal" : "DIFFER");
  std::printf("  stage  hit rate meas./sim.   loads meas./sim.   MiB loaded   stall ms meas./sim.\n");
  bool counts_equal = true;
  for (size_t s = 0; s < predicted.stages.size(); ++s) {
    const auto& p = predicted.stages[s];
    if (!third.device_cache.at(s)) {
      std::printf("  %5zu  (whole slice resident)\n", s);
      continue;
    }
    const auto& m = *third.device_cache[s];
    counts_equal = counts_equal && m.loads == p.loads && m.hits == p.hits;
    std::printf("  %5zu  %8.3f / %.3f   %8llu / %llu   %10.2f   %10.1f / %.1f\n", s, m.hit_rate(), p.hit_rate(),
                static_cast<unsigned long long>(m.loads), static_cast<unsigned long long>(p.loads),
                m.load_bytes / (1024.0 * 1024), m.stall_ms, p.stall_ms);
  }
  bool ok = full.stage_hashes == third.stage_hashes && counts_equal;
  if (!ok) std::printf("!! weights or cache counts differ from the unlimited run / the prediction\n");
  return ok ? 0 : 1;
}
