#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "core/job/job_plan.h"
#include "core/trace/chrome_trace.h"

namespace pw::cli {
namespace {

nlohmann::json result_json(const PreparedJob& p, const SimResult& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const auto& st = r.stages[s];
    stages.push_back({{"stage", s},
                      {"busy_fraction", st.busy_fraction},
                      {"busy_ms", st.busy_ms},
                      {"time_ms", st.time_ms},
                      {"peak_memory_bytes", st.peak_memory_bytes},
                      {"memory_budget_bytes", st.memory_budget_bytes}});
  }
  nlohmann::json j{{"job", p.job.name},
                   {"schedule", to_string(p.job.pipeline.schedule)},
                   {"planner", p.plan.planner},
                   {"stages_count", p.job.pipeline.stages},
                   {"microbatches", p.job.pipeline.microbatches},
                   {"throughput_samples_per_s", r.throughput_samples_per_s},
                   {"iteration_time_ms", r.iteration_time_ms},
                   {"bubble_fraction", r.bubble_fraction},
                   {"events", r.events},
                   {"feasible", r.feasible},
                   {"stages", stages},
                   {"plan", to_json(p.plan)}};
  if (!r.feasible) {
    j["reason"] = r.reason;
    j["oom_stage"] = r.oom_stage;
  }
  return j;
}

void print_human(const PreparedJob& p, const SimResult& r) {
  const auto& job = p.job;
  std::cout << "job " << job.name << ": " << job.model.kind << ", " << p.profile.size() << " layers, "
            << job.pipeline.stages << " stages x " << job.cluster.device.preset << ", "
            << to_string(job.pipeline.schedule) << ", " << job.pipeline.microbatches << " microbatches of "
            << job.training.microbatch_size << ", planner " << p.plan.planner << "\n\n";
  std::cout << "  throughput      " << fixed(r.throughput_samples_per_s, 1) << " samples/s\n"
            << "  iteration time  " << fixed(r.iteration_time_ms, 2) << " ms\n"
            << "  bubble          " << pct(r.bubble_fraction) << "\n"
            << "  events          " << r.events << "\n\n";
  std::cout << "  stage  layers       busy   time/mb ms   peak memory      budget\n";
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const auto& st = r.stages[s];
    std::string layers;
    for (size_t j = s; j < p.plan.stages.size(); j += r.stages.size())
      layers += (layers.empty() ? "" : ",") + std::to_string(p.plan.stages[j].first_layer) + "-" +
                std::to_string(p.plan.stages[j].last_layer);
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 10 ? 10 - layers.size() : 1, ' ')
              << pad(pct(st.busy_fraction), 7) << pad(fixed(st.time_ms, 2), 13) << pad(gib(st.peak_memory_bytes), 14)
              << pad(gib(st.memory_budget_bytes), 12) << (st.peak_memory_bytes > st.memory_budget_bytes ? "  OOM" : "")
              << "\n";
  }
  if (!r.feasible) std::cout << "\nINFEASIBLE: " << r.reason << "\n";
}
}  // namespace

int cmd_simulate(const std::vector<std::string>& argv) {
  CliArgs args(argv, {"json"}, {"planner", "trace", "profile"});
  args.expect_positional(1, "one job file");
  JobSpec job = load_job(args.positional()[0], args.overrides());
  if (auto profile = args.option("profile")) job.model.profile = *profile;
  PreparedJob p = prepare_job(job, args.option("planner").value_or(""));

  std::unique_ptr<std::ofstream> trace_file;
  std::unique_ptr<ChromeTraceWriter> trace;
  if (auto path = args.option("trace")) {
    trace_file = std::make_unique<std::ofstream>(*path);
    if (!*trace_file) throw std::runtime_error("cannot write trace \"" + *path + "\"");
    trace = std::make_unique<ChromeTraceWriter>(*trace_file, job.pipeline.stages, "pipewright simulate " + job.name);
  }
  SimResult r = simulate(p.sim_input(), trace.get());
  if (trace) trace->finish();

  if (args.flag("json")) {
    auto j = result_json(p, r);
    if (auto path = args.option("trace")) j["trace"] = *path;
    std::cout << j.dump(2) << "\n";
  } else {
    print_human(p, r);
    if (auto path = args.option("trace")) std::cout << "\nChrome trace: " << *path << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
  return 0;
}

}  // namespace pw::cli
