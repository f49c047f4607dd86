// pw_bench_presets: the analytic device presets against layers measured on
// this machine's device (issue 27). Every layer of a GPT job is measured
// at microbatch 1..32 where a stage would compute (a GPU where libtorch
// sees one, else the CPU; runtime/profiler.h), and the same job's analytic
// profile is read for each preset that describes such a device (h100 and
// h200 on a GPU, cpu on the CPU). Per size and kind (forward, backward,
// optimizer step: the layers' sum) it prints measured, predicted and the
// error, so a preset's rule (docs/planners.md, "Costs per microbatch size")
// can be checked against a real device. scripts/gpu-check runs it on the
// GPU machine; scripts/bench runs it everywhere.
//   pw_bench_presets [JOB.json]   default: resources/jobs/tiny-lm-4stage.json
// PW_BENCH_JSON=FILE also writes the table as JSON.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_quick.h"
#include "core/job/job_plan.h"
#include "core/plan/microbatch_search.h"
#include "core/spec/device.h"
#include "core/spec/job_spec.h"
#include "runtime/profiler.h"

using namespace pw;

namespace {

struct KindSums {
  double fwd = 0, bwd = 0, opt = 0;
};

KindSums sums(const ModelProfile& p) {
  KindSums s;
  for (const auto& l : p.layers) s.fwd += l.fwd_ms, s.bwd += l.bwd_ms, s.opt += l.optimizer_ms;
  return s;
}

JobSpec at_size(JobSpec job, int b) {
  resolve_auto_microbatch(job, b);
  return job;
}

// The job's analytic profile on `preset` (its model.profile dropped: the
// preset's rule is what is checked).
ModelProfile preset_profile(JobSpec job, const std::string& preset) {
  job.cluster.device = *device_preset(preset);
  job.model.profile.clear();
  return job_profile(job);
}

double error_pct(double predicted, double measured) {
  return measured > 0 ? 100 * (predicted - measured) / measured : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string file = argc > 1 ? argv[1] : std::string(PW_SOURCE_DIR) + "/resources/jobs/tiny-lm-4stage.json";
  // One stage's layers, measured as one worker would (a GPU alone; on the
  // CPU with every core).
  JobSpec job = load_job(file, {"training.batch_size=32", "pipeline.stages=1", "cluster.devices=1"});
  const c10::Device device = rt::profile_device("auto");
  const std::vector<std::string> presets =
      device.is_cuda() ? std::vector<std::string>{"h100", "h200"} : std::vector<std::string>{"cpu"};
  const std::vector<int> sizes = bench::quick_or<std::vector<int>>({1, 2}, {1, 2, 4, 8, 16, 32});
  rt::ProfileOptions o;
  o.repeats = bench::quick_or(2, 20);
  o.threads = device.is_cuda() ? 1 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::printf("pw_bench_presets: %s (%d layers, %s), measured on %s, %d repeats per layer\n", job.name.c_str(),
              static_cast<int>(preset_profile(job, presets.front()).layers.size()), job.model.precision.c_str(),
              device.str().c_str(), o.repeats);
  std::printf("  (the presets assume fp16 tensor-core arithmetic at ~45%% of peak; a job in %s runs otherwise)\n\n",
              job.model.precision.c_str());
  std::printf("  %5s  %-9s %12s", "b", "kind", "measured ms");
  for (const auto& p : presets) std::printf(" %12s %8s", (p + " ms").c_str(), "error");
  std::printf("\n");
  nlohmann::json out = {{"job", job.name}, {"device", device.str()}, {"precision", job.model.precision}, {"rows", nlohmann::json::array()}};
  std::vector<double> worst(presets.size(), 0);
  for (int b : sizes) {
    const JobSpec at = at_size(job, b);
    const KindSums m = sums(rt::measure_profile(at, o));
    std::vector<KindSums> p;
    for (const auto& name : presets) p.push_back(sums(preset_profile(at, name)));
    const char* kinds[] = {"forward", "backward", "optimizer"};
    for (int k = 0; k < 3; ++k) {
      auto pick = [k](const KindSums& s) { return k == 0 ? s.fwd : k == 1 ? s.bwd : s.opt; };
      std::printf("  %5d  %-9s %12.4f", b, kinds[k], pick(m));
      nlohmann::json row = {{"microbatch", b}, {"kind", kinds[k]}, {"measured_ms", pick(m)}};
      for (std::size_t i = 0; i < presets.size(); ++i) {
        const double e = error_pct(pick(p[i]), pick(m));
        worst[i] = std::max(worst[i], std::abs(e));
        std::printf(" %12.4f %+7.1f%%", pick(p[i]), e);
        row[presets[i] + "_ms"] = pick(p[i]);
      }
      std::printf("\n");
      out["rows"].push_back(row);
    }
  }
  for (std::size_t i = 0; i < presets.size(); ++i)
    std::printf("worst error of the %s preset: %.1f%%%s\n", presets[i].c_str(), worst[i],
                bench::quick() ? " [quick mode: not a measurement]" : "");
  if (const char* path = std::getenv("PW_BENCH_JSON"); path && *path) std::ofstream(path) << out.dump(2) << "\n";
  return 0;
}
