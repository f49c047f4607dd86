#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/nas_simulate.h"
#include "core/nas/search_space.h"
#include "cli/format.h"
#include "cli/interrupt.h"
#include "cli/output_file.h"
#include "core/job/job_plan.h"
#include "core/trace/chrome_trace.h"
#include "core/events/run_records.h"
#include <functional>
#ifdef PW_HAVE_DB
#include "core/model/profile_io.h"
#include "db/run_writer.h"
#endif
#ifdef PW_HAVE_IPC
#include <filesystem>
#include "cli/ipc/sim_telemetry.h"
#include "ipc/endpoints.h"
#endif

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

// Tees the simulator's stream to every output (--trace, --db, --listen);
// `gate` runs first (pause / stop / pace of --listen).
struct Fanout final : EventSink {
  std::vector<EventSink*> sinks;
  std::function<void(std::int64_t)> gate;
  std::int64_t last_end = 0;
  void on_event(const Event& e) override {
    if (gate) gate(e.start_ns);
    last_end = std::max(last_end, e.end_ns);
    for (auto* s : sinks) s->on_event(e);
  }
  void on_memory(std::int32_t stage, std::int64_t t, std::int64_t b) override {
    for (auto* s : sinks) s->on_memory(stage, t, b);
  }
};

double number_option(const CliArgs& a, const char* name) {
  auto v = a.option(name);
  if (!v) return 0;
  try {
    double d = std::stod(*v);
    if (d >= 0) return d;
  } catch (...) {
  }
  throw UsageError(std::string("--") + name + ": want a number >= 0, got \"" + *v + "\"");
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
  CliArgs args(argv, {"json", "allow-remote", "overwrite"}, {"planner", "trace", "profile", "db", "listen", "linger", "pace", "curve-dir"});
  args.expect_positional(1, "one job file");
  JobSpec job = load_job(args.positional()[0], args.overrides());
  if (auto profile = args.option("profile")) job.model.profile = *profile;
  if (nas::is_supernet_job(job)) return simulate_supernet_command(job, args);  // NAS: --json --trace --db --listen
  PreparedJob p = prepare_job(job, args.option("planner").value_or(""));
  // What loading a measured profile assumed (scaling, device), on stderr.
  for (const auto& a : p.profile.assumptions) std::cerr << "note: " << a << "\n";

  std::unique_ptr<OutputFile> trace_file;
  std::unique_ptr<ChromeTraceWriter> trace;
  if (auto path = args.option("trace")) {
    trace_file = std::make_unique<OutputFile>(*path, "trace");
    trace = std::make_unique<ChromeTraceWriter>(trace_file->stream(), job.pipeline.stages, "pipewright simulate " + job.name);
  }
#ifndef PW_HAVE_DB
  if (args.option("db")) throw UsageError("--db: this pipewright was built without SQLite");
#endif
#ifndef PW_HAVE_IPC
  if (args.option("listen")) throw UsageError("--listen: this pipewright was built without ZeroMQ/protobuf");
#endif
  Fanout out;
  if (trace) out.sinks.push_back(trace.get());
  bool recording = false;  // --db or --listen
  const std::string run_id = new_run_id();
  std::function<void(RunStatus, const std::string&, const SimResult*)> end_run = [](RunStatus, const std::string&, const SimResult*) {};
#ifdef PW_HAVE_DB
  std::unique_ptr<db::RunWriter> rec;
  if (auto path = args.option("db")) {
    db::RunWriterOptions o;
    o.overwrite = args.flag("overwrite");  // only ever a Pipewright run database
    rec = std::make_unique<db::RunWriter>(*path, db::RunInfo{run_id, job.name, "simulate", job.pipeline.stages}, o);
    rec->job(job.raw);
    rec->profile(profile_to_json(p.profile));
    rec->plan(1, 0, "initial plan", to_json(p.plan));
    out.sinks.push_back(rec.get());
    recording = true;
  }
#endif
#ifdef PW_HAVE_IPC
  std::unique_ptr<SimTelemetry> tel;
  // Removed however the command ends (error, stop, SIGINT/SIGTERM): a
  // stale file would point clients at a run that is gone.
  struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } endpoints_guard;
  std::string& endpoints_file = endpoints_guard.path;
  if (auto ep = args.option("listen")) {
    std::optional<ipc::CurveServer> curve;
    if (auto dir = args.option("curve-dir")) curve = ipc::curve_server_from_dir(*dir);
    tel = std::make_unique<SimTelemetry>(*ep, args.flag("allow-remote"), run_id, number_option(args, "pace"),
                                         curve ? &*curve : nullptr);
    auto& pub = tel->publisher();
    pub.set_run_info(job.name, job.pipeline.stages, "simulate", args.option("db").value_or(""));
    pub.status(RunStatus::Running);
    pub.plan(1, 0, "initial plan", to_json(p.plan));
    out.sinks.push_back(&pub);
    recording = true;
    out.gate = [&](std::int64_t t) {
      check_interrupt();
      tel->gate(t);
    };
    std::cerr << "telemetry " << tel->telemetry_endpoint() << "  control " << tel->control_endpoint() << std::endl;
#ifdef PW_HAVE_DB
    if (rec) {
      rec->endpoint("telemetry", tel->telemetry_endpoint());
      rec->endpoint("control", tel->control_endpoint());
      endpoints_file = std::filesystem::path(*args.option("db")).replace_extension(".endpoints.json").string();
      ipc::write_endpoints_file(endpoints_file, run_id, tel->telemetry_endpoint(), tel->control_endpoint());
    }
#endif
  }
#endif
  // A recording run ends by SIGINT/SIGTERM as "interrupted", never left "running".
  if (recording) {
    catch_interrupts();
    if (!out.gate) out.gate = [](std::int64_t) { check_interrupt(); };
  }
  end_run = [&](RunStatus status, const std::string& reason, const SimResult* r) {
    ThroughputSample tp{out.last_end, 1, r ? r->throughput_samples_per_s : 0, r ? r->iteration_time_ms : 0};
#ifdef PW_HAVE_DB
    if (rec) {
      if (r) {
        rec->throughput(tp);
        rec->summary(result_json(p, *r));
      }
      rec->finish(status, reason);
    }
#endif
#ifdef PW_HAVE_IPC
    if (tel) {
      if (r) tel->publisher().throughput(tp);
      tel->finish(status, reason, 0);
    }
#endif
  };
  SimResult r;
  try {
    r = simulate(p.sim_input(), out.sinks.empty() && !out.gate ? nullptr : &out);
  } catch (const std::exception& e) {
#ifdef PW_HAVE_IPC
    if (dynamic_cast<const SimStopped*>(&e)) {
      end_run(RunStatus::Stopped, e.what(), nullptr);
      std::cout << "simulation " << e.what() << "\n";
      return 1;
    }
#endif
    if (auto* i = dynamic_cast<const Interrupted*>(&e)) {
      end_run(RunStatus::Interrupted, i->what(), nullptr);
      throw;
    }
    end_run(RunStatus::Failed, e.what(), nullptr);
    throw;
  }
  if (trace) {
    trace->finish();
    try {
      trace_file->close();  // a full disk shows here, not as a truncated file and exit 0
    } catch (const std::exception& e) {
      end_run(RunStatus::Failed, e.what(), nullptr);
      throw;
    }
  }
  end_run(r.feasible ? RunStatus::Finished : RunStatus::Failed, r.reason, &r);

  if (args.flag("json")) {
    auto j = result_json(p, r);
    if (auto path = args.option("trace")) j["trace"] = *path;
    if (auto path = args.option("db")) j["db"] = *path, j["run_id"] = run_id;
    std::cout << j.dump(2) << "\n";
  } else {
    print_human(p, r);
    if (auto path = args.option("trace")) std::cout << "\nChrome trace: " << *path << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
#ifdef PW_HAVE_IPC
  if (tel) {
    std::cout.flush();
    tel->finish(r.feasible ? RunStatus::Finished : RunStatus::Failed, r.reason, number_option(args, "linger"));
  }
#endif
  return 0;
}

}  // namespace pw::cli
