#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/nas_simulate.h"
#include "core/nas/search_space.h"
#include "cli/format.h"
#include "cli/job_inputs.h"
#include "core/io/checked_write.h"
#include "core/job/job_plan.h"
#include "core/trace/chrome_trace.h"
#include "core/events/run_records.h"
#include "core/model/profile_io.h"
#include "cli/run_outputs.h"
#include "cli/simulate_args.h"
#include "cli/sim_control.h"

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
                      {"first_start_ms", st.first_start_ms},
                      {"last_end_ms", st.last_end_ms},
                      {"peak_memory_bytes", st.peak_memory_bytes},
                      {"memory_budget_bytes", st.memory_budget_bytes},
                      {"sync_ms", st.sync_ms},
                      {"sync_exposed_ms", st.sync_exposed_ms},
                      {"tensor_ms", st.tensor_ms}});
  }
  nlohmann::json j{{"job", p.job.name},
                   {"schedule", to_string(p.job.pipeline.schedule)},
                   {"planner", p.plan.planner},
                   {"stages_count", p.job.pipeline.stages},
                   {"replicas", r.replicas},
                   {"tensor", r.tensor},
                   {"microbatches", p.job.pipeline.microbatches},
                   {"throughput_samples_per_s", r.throughput_samples_per_s},
                   {"iteration_time_ms", r.iteration_time_ms},
                   {"iteration_cost", to_string(iteration_cost_of(p.job))},
                   {"span_ms", r.span_ms},
                   {"bubble_fraction", r.bubble_fraction},
                   {"overlapped_iteration_ms", r.overlapped_iteration_ms},
                   {"window_bubble_fraction", r.window_bubble_fraction},
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
            << (r.tensor > 1 ? "tensor " + std::to_string(r.tensor) + (job.parallel.sequence ? " + sequence" : "") + ", "
                             : "")
            << (r.replicas > 1 ? std::to_string(r.replicas) + " replicas, " : "")
            << to_string(job.pipeline.schedule) << ", " << job.pipeline.microbatches << " microbatches of "
            << job.training.microbatch_size << (r.replicas > 1 ? " per replica" : "") << ", planner "
            << p.plan.planner << "\n\n";
  std::cout << "  throughput      " << fixed(r.throughput_samples_per_s, 1) << " samples/s"
            << (r.replicas > 1 ? " (all " + std::to_string(r.replicas) + " replicas)" : "") << "\n"
            << "  iteration time  " << fixed(r.iteration_time_ms, 2) << " ms\n"
            << (r.span_ms > r.iteration_time_ms * (1 + 1e-9) && p.schedule->flushes()
                    ? "  flushed span    " + fixed(r.span_ms, 2) +
                          " ms (iterations overlap: each costs its longest device window, docs/schedules.md)\n"
                    : std::string())
            << "  bubble          " << pct(r.bubble_fraction) << "\n"
            << "  events          " << r.events << "\n\n";
  const bool sync = r.replicas > 1;
  const bool tensor = r.tensor > 1;
  std::cout << "  stage  layers       busy   time/mb ms   peak memory      budget"
            << (sync ? "   sync ms  exposed" : "") << (tensor ? "   tensor all-reduce ms" : "") << "\n";
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const auto& st = r.stages[s];
    std::string layers;
    for (size_t j = s; j < p.plan.stages.size(); j += r.stages.size())
      layers += (layers.empty() ? "" : ",") + std::to_string(p.plan.stages[j].first_layer) + "-" +
                std::to_string(p.plan.stages[j].last_layer);
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 10 ? 10 - layers.size() : 1, ' ')
              << pad(pct(st.busy_fraction), 7) << pad(fixed(st.time_ms, 2), 13) << pad(gib(st.peak_memory_bytes), 14)
              << pad(gib(st.memory_budget_bytes), 12)
              << (sync ? pad(fixed(st.sync_ms, 2), 10) + pad(fixed(st.sync_exposed_ms, 2), 9) : "")
              << (tensor ? pad(fixed(st.tensor_ms, 2), 12) : "")
              << (st.peak_memory_bytes > st.memory_budget_bytes ? "  OOM" : "") << "\n";
  }
  if (!r.feasible) std::cout << "\nINFEASIBLE: " << r.reason << "\n";
}

int run_simulate(const SimulateArgs& args) {
  JobSpec job = load_job(args.job_file, args.overrides);
  if (!args.profile.empty()) job.model.profile = args.profile;
  if (nas::is_supernet_job(job)) return simulate_supernet_command(job, args);  // NAS: --json --trace --db --listen
  PreparedJob p = prepare_job(job, args.planner);
  // What loading a measured profile assumed (scaling, device), on stderr.
  for (const auto& a : p.profile.assumptions) std::cerr << "note: " << a << "\n";

  std::unique_ptr<OutputStream> trace_file;
  std::unique_ptr<ChromeTraceWriter> trace;
  if (!args.trace.empty()) {
    trace_file = std::make_unique<OutputStream>(trace_target(args, job_inputs(args.job_file, job)));
    trace = std::make_unique<ChromeTraceWriter>(trace_file->stream(), job.pipeline.stages, "pipewright simulate " + job.name);
  }
  RunOutputs outputs(args.outputs, {new_run_id(), job.name, "simulate", job.pipeline.stages});
  if (outputs.recording()) {
    nlohmann::json profile = profile_to_json(p.profile), plan = to_json(p.plan);
    outputs.begin(job.raw, &profile, &plan);
  }
  SimulationControl control(outputs, args.pace);  // signals, --listen's control and --pace
  if (trace) control.add(trace.get());
  if (outputs.recording()) control.add(&outputs.recorder());
  auto end_run = [&](RunStatus status, const std::string& reason, const SimResult* r, double linger_s) {
    if (r) outputs.recorder().throughput({control.last_end_ns(), 1, r->throughput_samples_per_s, r->iteration_time_ms});
    nlohmann::json summary = r ? result_json(p, *r) : nlohmann::json();
    outputs.finish(status, reason, r ? &summary : nullptr, linger_s);
  };
  SimResult r;
  if (!control.run([&] { r = simulate(p.sim_input(), control.sink()); })) return 1;  // stopped
  // What the simulator cannot see but the plan's evaluation did:
  // pipeline.memory_cap (evaluate_plan), named in the plan's reason.
  if (r.feasible && !p.plan.feasible && !p.plan.reason.empty()) {
    r.feasible = false;
    r.reason = p.plan.reason;
  }
  if (trace) {
    trace->finish();
    try {
      trace_file->commit();  // a full disk shows here, not as a truncated file and exit 0
    } catch (const std::exception& e) {
      end_run(RunStatus::Failed, e.what(), nullptr, 0);
      throw;
    }
  }

  if (args.json) {
    auto j = result_json(p, r);
    if (!args.trace.empty()) j["trace"] = args.trace;
    if (!args.outputs.db_path.empty()) j["db"] = args.outputs.db_path, j["run_id"] = outputs.run_id();
    std::cout << j.dump(2) << "\n";
  } else {
    print_human(p, r);
    if (!args.trace.empty()) std::cout << "\nChrome trace: " << args.trace << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
  // Last: a lingering run keeps serving late joiners after the printout.
  std::cout.flush();
  end_run(r.feasible ? RunStatus::Finished : RunStatus::Failed, r.reason, &r, args.linger_s);
  return 0;
}
}  // namespace

Action define_simulate(Args& args) {
  auto a = std::make_shared<SimulateArgs>();
  args.positional("JOB.json", a->job_file, "the job file");
  args.planner(a->planner);
  args.profile(a->profile);
  args.json(a->json);
  args.output("--trace", a->trace, "OUT.json", "write a Chrome/Perfetto trace of every event");
  args.run_outputs(a->outputs);
  args.number("--linger", a->linger_s, 0, 86400, "S", "with --listen: keep answering late joiners this long after the end");
  args.number("--pace", a->pace, 0, 1e9, "F", "with --listen: run at F simulated seconds per wall second (0: full speed)");
  args.needs("--linger", "--listen");
  args.needs("--pace", "--listen");
  args.overrides(a->overrides);
  return [a] { return run_simulate(*a); };
}

}  // namespace pw::cli
