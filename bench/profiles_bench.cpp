// Planners on PipeDream's measured profiles (resources/profiles/pipedream,
// or the folder given as the first argument): for each model and 2, 4, 8
// stages, the slowest stage's compute time per microbatch (forward +
// backward + recompute, the cost model's stage time) and the speedup over
// one stage holding the whole model, which is the baseline, computed in
// the same process. Unconstrained memory and 16 GiB per device. Prints a
// Markdown table (docs/profiles.md holds a copy).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench_quick.h"
#include "core/cost/stage_cost.h"
#include "core/model/graph_order.h"
#include "core/model/profile_io.h"
#include "core/plan/planner.h"
#include "core/spec/device.h"

using namespace pw;

namespace {

constexpr std::uint64_t GiB = 1ull << 30;

struct Cell {
  double slowest_ms = 0;
  bool feasible = true;
};

ScheduleKind schedule_for(const std::string& planner) {
  if (planner == "gpipe") return ScheduleKind::GPipe;
  if (planner == "pipedream") return ScheduleKind::PipeDream;
  return ScheduleKind::OneFOneB;
}

Cell run(const std::string& planner, const ModelProfile& p, int stages, std::uint64_t memory) {
  PlanRequest req;
  req.profile = &p;
  req.device = *device_preset("v100-32g");
  req.device.memory_bytes = memory;
  req.schedule = schedule_for(planner);
  req.stages = stages;
  req.microbatches = 4 * stages;
  req.microbatch_size = std::max(1, p.microbatch_size);
  Cell c;
  try {
    Plan plan = run_planner(planner, req);
    for (const auto& r : plan.stages) c.slowest_ms = std::max(c.slowest_ms, stage_cost(p, r, plan.policy).compute_ms());
    c.feasible = plan.feasible;
  } catch (const std::exception& e) {
    std::cerr << planner << ": " << e.what() << "\n";
    c.feasible = false;
  }
  return c;
}

std::string cell_text(const Cell& c, double one_stage) {
  char buf[64];
  if (c.slowest_ms <= 0) return "n/a";
  std::snprintf(buf, sizeof buf, "%.1f (%.2fx)%s", c.slowest_ms, one_stage / c.slowest_ms, c.feasible ? "" : " OOM");
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = argc > 1 ? argv[1] : std::string(PW_SOURCE_DIR) + "/resources/profiles/pipedream";
  if (!std::filesystem::exists(root + "/alexnet/graph.txt")) {
    std::cerr << "pw_bench_profiles: no PipeDream profiles at " << root << " (they ship in resources/profiles/pipedream)\n";
    return 1;
  }
  // Quick: a chain, a residual network and an RNN.
  const auto models = pw::bench::quick_or<std::vector<std::string>>(
      {"alexnet", "resnet18", "gnmt"}, {"alexnet", "vgg16", "resnet18", "resnet50", "resnet101", "densenet121",
                                        "inception_v3", "gnmt", "gnmt_large"});
  const std::vector<std::string> planners = {"pipedream", "gpipe", "uniform", "vpipe"};
  auto names = planner_names();
  for (const auto& pl : planners)
    if (std::find(names.begin(), names.end(), pl) == names.end()) {
      std::cout << "pw_bench_profiles: planner " << pl << " not registered (skipped)\n";
      return 0;
    }

  std::cout << "Slowest stage, ms per microbatch (speedup over one stage); device v100-32g, microbatch = the "
               "profiled minibatch, 4 x stages microbatches. OOM: the plan does not fit.\n\n";
  for (const auto& [label, memory] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"unconstrained memory", 1ull << 50}, {"16 GiB per device", 16 * GiB}}) {
    std::cout << "### " << label << "\n\n| model | mb | 1 stage ms | k | order gap |";
    for (const auto& pl : planners) std::cout << " " << pl << " |";
    std::cout << "\n|---|---|---|---|---|";
    for (size_t i = 0; i < planners.size(); ++i) std::cout << "---|";
    std::cout << "\n";
    for (const auto& model : models) {
      ModelProfile p = load_profile_file(root + "/" + model + "/graph.txt", 0);
      double one = 0;
      for (const auto& l : p.layers) one += l.fwd_ms + l.bwd_ms;
      for (int k : {2, 4, 8}) {
        auto t0 = std::chrono::steady_clock::now();
        ModelProfile laid = order_for_stages(p, k);
        double layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        // How much worse PipeDream's split is on the profiler's execution
        // order than on the layout for k stages (1.000 on chains).
        Cell fixed = run("pipedream", p, k, 1ull << 50), best = run("pipedream", laid, k, 1ull << 50);
        char gap[32];
        std::snprintf(gap, sizeof gap, "%.3f", fixed.slowest_ms / best.slowest_ms);
        char onebuf[32];
        std::snprintf(onebuf, sizeof onebuf, "%.1f", one);
        std::cout << "| " << model << " | " << p.microbatch_size << " | " << onebuf << " | " << k << " | " << gap
                  << " |";
        for (const auto& pl : planners) std::cout << " " << cell_text(run(pl, laid, k, memory), one) << " |";
        std::cout << "\n";
        if (layout_ms > 100) std::cerr << "  (" << model << " k=" << k << ": layout took " << layout_ms << " ms)\n";
      }
    }
    std::cout << "\n";
  }
  return 0;
}
