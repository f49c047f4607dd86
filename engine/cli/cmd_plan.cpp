#include <iostream>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "core/job/job_plan.h"

namespace pw::cli {

int cmd_plan(const std::vector<std::string>& argv) {
  CliArgs args(argv, {"json"}, {"planner", "profile"});
  args.expect_positional(1, "one job file");
  JobSpec job = load_job(args.positional()[0], args.overrides());
  if (auto profile = args.option("profile")) job.model.profile = *profile;
  ModelProfile profile = job_profile(job);
  // What loading a measured profile assumed (scaling, device), on stderr.
  for (const auto& a : profile.assumptions) std::cerr << "note: " << a << "\n";
  PlanRequest req = plan_request(job, profile);
  Plan plan = run_planner(args.option("planner").value_or(job.pipeline.planner), req);
  if (args.flag("json")) {
    std::cout << to_json(plan).dump(2) << "\n";
    return 0;
  }
  std::cout << "plan by " << plan.planner << " for " << job.name << " (" << profile.size() << " layers, "
            << plan.stages.size() << " stages), found in " << fixed(plan.planning_time_ms, 2) << " ms\n\n";
  std::cout << "  stage  layers     recompute  swap   time/mb ms   peak memory      budget\n";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const auto& r = plan.stages[s];
    int rec = 0, swp = 0;
    for (int l = r.first_layer; l <= r.last_layer; ++l) {
      rec += plan.policy[l] == MemoryPolicy::Recompute;
      swp += plan.policy[l] == MemoryPolicy::Swap;
    }
    const auto& pr = plan.predicted[s];
    std::string layers = std::to_string(r.first_layer) + "-" + std::to_string(r.last_layer);
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 9 ? 9 - layers.size() : 1, ' ')
              << pad(std::to_string(rec), 10) << pad(std::to_string(swp), 6) << pad(fixed(pr.time_ms, 2), 13)
              << pad(gib(pr.peak_memory_bytes), 14) << pad(gib(pr.memory_budget_bytes), 12)
              << (pr.peak_memory_bytes > pr.memory_budget_bytes ? "  OOM" : "") << "\n";
  }
  std::cout << "\n  iteration " << fixed(plan.iteration_time_ms, 2) << " ms, " << fixed(plan.throughput_samples_per_s, 1)
            << " samples/s" << (plan.feasible ? "" : "\n  INFEASIBLE: " + plan.reason) << "\n";
  return 0;
}

}  // namespace pw::cli
