#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/job_inputs.h"
#include "core/io/checked_write.h"
#include "core/plan/layer_list.h"
#include "core/job/job_plan.h"
#include "core/nas/search_space.h"
#include "core/plan/plan_order.h"
#include "core/schedule/torch_actions.h"

namespace pw::cli {

namespace {

void print_plan_table(const JobSpec& job, const ModelProfile& profile, const Plan& plan) {
  std::cout << "plan by " << plan.planner << " for " << job.name << ": " << profile.size() << " layers on "
            << plan.stages.size() << " stages, "
            << (job.parallel.tensor > 1 ? "each split over " + std::to_string(job.parallel.tensor) + " devices (tensor" +
                                              (job.parallel.sequence ? " + sequence" : "") + " parallel), "
                                        : "")
            << (job.parallel.data > 1 ? std::to_string(job.parallel.data) + " replicas of the pipeline, " : "")
            << (plan.schedule.empty() ? to_string(job.pipeline.schedule) : plan.schedule)
            << (job.pipeline.schedule_auto ? " (auto)" : "") << ", "
            << job.pipeline.microbatches << " microbatches of " << job.training.microbatch_size << "; found in "
            << fixed(plan.planning_time_ms, 2) << " ms\n\n";
  // PipeDream's per-stage replication: each stage's workers (x the replicas of the pipeline).
  const bool per_stage = !plan.replicas.empty();
  std::cout << "  stage  layers      n   recompute            swap                 time/mb ms   peak memory / budget"
            << (per_stage ? "   replicas" : "") << "\n";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const auto& r = plan.stages[s];
    std::vector<int> rec, swp;
    for (int l = r.first_layer; l <= r.last_layer; ++l) {
      if (plan.policy[l] == MemoryPolicy::Recompute) rec.push_back(l);
      if (plan.policy[l] == MemoryPolicy::Swap) swp.push_back(l);
    }
    auto cell = [](const std::vector<int>& v, size_t width) {
      std::string c = std::to_string(v.size()) + " " + layer_list(v);
      if (c.size() > width - 1) c = c.substr(0, width - 4) + "...";
      return c + std::string(width - c.size(), ' ');
    };
    const auto& pr = plan.predicted[s];
    std::string layers = std::to_string(r.first_layer) + "-" + std::to_string(r.last_layer);
    double used = pr.memory_budget_bytes ? static_cast<double>(pr.peak_memory_bytes) / pr.memory_budget_bytes : 0;
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 10 ? 10 - layers.size() : 1, ' ')
              << pad(std::to_string(r.size()), 3) << "   " << cell(rec, 21) << cell(swp, 21) << pad(fixed(pr.time_ms, 2), 10)
              << pad(gib(pr.peak_memory_bytes), 14) << " / " << gib(pr.memory_budget_bytes) << " (" << pct(used) << ")"
              << (pr.peak_memory_bytes > pr.memory_budget_bytes ? "  OOM" : "")
              << (per_stage ? "   " + std::to_string(plan.replicas_of(static_cast<int>(s))) : "") << "\n";
  }
  std::cout << "\n  iteration " << fixed(plan.iteration_time_ms, 2) << " ms, " << fixed(plan.throughput_samples_per_s, 1)
            << " samples/s"
            << (job.parallel.data > 1 ? " over " + std::to_string(job.parallel.data) + " replicas" : "")
            << (plan.best_1f1b_ms > 0 && plan.iteration_time_ms > 0
                    ? ", x" + fixed(plan.best_1f1b_ms / plan.iteration_time_ms, 3) + " over the best 1F1B plan (" +
                          fixed(plan.best_1f1b_ms, 2) + " ms)"
                    : "")
            << (plan.layers_moved ? ", " + std::to_string(plan.layers_moved) + " layers moved" : "")
            << (plan.feasible ? "" : "\n  INFEASIBLE: " + plan.reason) << "\n";
  const auto selective = std::count(plan.policy.begin(), plan.policy.end(), MemoryPolicy::Selective);
  if (selective > 0)
    std::cout << "  selective recomputation (the attention core) on " << selective << " layers\n";
}

// Under training.microbatch_size "auto": the best plan of every size tried.
void print_microbatch_search(const Plan& plan) {
  if (plan.microbatch_search.empty()) return;
  std::cout << "microbatch size (auto): the best " << plan.planner << " plan of each size\n\n"
            << "  size  microbatches  iteration ms   samples/s   peak memory   feasible\n";
  for (const auto& c : plan.microbatch_search) {
    const bool planned = c.iteration_time_ms > 0;
    std::cout << pad(std::to_string(c.microbatch_size), 6) << pad(std::to_string(c.microbatches), 14)
              << pad(planned ? fixed(c.iteration_time_ms, 2) : c.pruned ? "> " + fixed(c.lower_bound_ms, 2) : "-", 15)
              << pad(planned ? fixed(1e3 * c.microbatch_size * c.microbatches * plan.data_parallel / c.iteration_time_ms, 1)
                             : "-",
                     12)
              << pad(planned ? gib(c.peak_memory_bytes) : "-", 14) << "   "
              << (c.feasible ? "yes" : c.pruned ? "not planned (its bound is slower than the choice)" : "no: " + c.reason)
              << (c.microbatch_size == plan.microbatch_size ? "   <- chosen" : "") << "\n";
  }
  std::cout << "\n";
}

// Under pipeline.stages / parallel.data / parallel.tensor "auto": the best
// plan of every (tensor, stages, replicas) split tried; the tensor column
// only where some split has tensor parallelism.
void print_parallel_search(const JobSpec& job, const Plan& plan) {
  if (plan.parallel_search.empty()) return;
  const bool tensor = std::any_of(plan.parallel_search.begin(), plan.parallel_search.end(),
                                  [](const ParallelChoice& c) { return c.tensor > 1; });
  std::cout << (tensor ? "tensor x stages x replicas (auto): the best " : "stages x replicas (auto): the best ")
            << plan.planner << " plan of each split\n\n"
            << (tensor ? "  tensor" : "")
            << "  stages  replicas  microbatch  iteration ms   samples/s   sync exposed ms   peak memory   feasible\n";
  for (const auto& c : plan.parallel_search) {
    const bool planned = c.iteration_time_ms > 0;
    if (tensor) std::cout << pad(std::to_string(c.tensor), 8);
    const bool split = c.stages > 0;  // a tensor size the search skipped has no split (its reason says why)
    std::cout << pad(split ? std::to_string(c.stages) : "-", 8) << pad(split ? std::to_string(c.replicas) : "-", 10)
              << pad(planned ? std::to_string(c.microbatch_size) + " x " + std::to_string(c.microbatches) : "-", 12)
              << pad(planned ? fixed(c.iteration_time_ms, 2) : "-", 14)
              << pad(planned ? fixed(c.throughput_samples_per_s, 1) : "-", 12)
              << pad(planned ? fixed(c.sync_exposed_ms, 2) : "-", 18) << pad(planned ? gib(c.peak_memory_bytes) : "-", 14)
              << "   " << (c.feasible ? "yes" : planned ? "no: " + c.reason.substr(0, c.reason.find(" (")) : c.reason)
              << (c.replicas == job.parallel.data && c.stages == job.pipeline.stages && c.tensor == job.parallel.tensor
                      ? "   <- chosen"
                      : "")
              << "\n";
  }
  std::cout << "\n";
}

struct PlanArgs {
  std::string job_file, planner, profile, export_schedule;
  std::vector<std::string> overrides;
  bool json = false, overwrite = false;
};

// --export-schedule: the planned schedule (auto's winner) as
// torch.distributed.pipelining's action CSV (core/schedule/torch_actions.h).
void export_schedule(const OutputTarget& out, JobSpec job, const Plan& plan) {
  resolve_auto_schedule(job, plan);
  auto sched = make_plan_schedule(job.pipeline.schedule, job.pipeline.stages, job.pipeline.microbatches,
                                  job.pipeline.chunks, plan);
  std::string csv;
  try {
    csv = torch_schedule_csv(*sched);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--export-schedule: ") + e.what());
  }
  write_output(out, csv);
}

// A supernet job has no plan to print: the CSP scheduler places each subnet
// as its layers come free while the job runs (docs/nas.md). A usage error
// naming the fields and the commands that do plan it, not the schedule
// builder's "CSP is a dynamic schedule" (exit 1).
void refuse_supernet(const JobSpec& job) {
  const bool csp = job.pipeline.schedule == ScheduleKind::CSP;
  // The job parser refuses csp without a search space (pipeline.schedule).
  if (!nas::is_supernet_job(job)) return;
  throw UsageError(std::string("a supernet job (search_space") + (csp ? ", pipeline.schedule \"csp\"" : "") +
                   ") has no static plan for `plan` to print: its subnets are scheduled as they run. `pipewright " +
                   "simulate JOB.json` plans and simulates it (partition, candidate cache, schedule); `pipewright " +
                   "run JOB.json` trains it");
}

int run_plan(const PlanArgs& a) {
  JobSpec job = load_job(a.job_file, a.overrides);
  if (!a.profile.empty()) job.model.profile = a.profile;
  refuse_supernet(job);
  // An existing file is refused before anything is planned; so is a file the command reads.
  const OutputTarget schedule_file{a.export_schedule, "--export-schedule", a.overwrite, job_inputs(a.job_file, job)};
  if (!a.export_schedule.empty()) check_output(schedule_file);
  PreparedJob prepared = prepare_job(job, a.planner);
  const ModelProfile& profile = prepared.profile;
  const Plan& plan = prepared.plan;
  // What loading a measured profile assumed (scaling, device), on stderr.
  for (const auto& n : profile.assumptions) std::cerr << "note: " << n << "\n";
  if (!a.export_schedule.empty()) export_schedule(schedule_file, prepared.job, plan);
  if (a.json) {
    std::cout << to_json(plan).dump(2) << "\n";
    return 0;
  }
  print_parallel_search(prepared.job, plan);
  print_microbatch_search(plan);
  job = prepared.job;
  print_plan_table(job, profile, plan);
  return 0;
}

}  // namespace

Action define_plan(Args& args) {
  auto a = std::make_shared<PlanArgs>();
  args.positional("JOB.json", a->job_file, "the job file");
  args.planner(a->planner);
  args.profile(a->profile);
  args.json(a->json);
  args.overrides(a->overrides);
  args.output("--export-schedule", a->export_schedule, "FILE.csv",
              "write the planned schedule as torch.distributed.pipelining's action CSV (one row per rank)");
  args.overwrite(a->overwrite);
  return [a] { return run_plan(*a); };
}

}  // namespace pw::cli
