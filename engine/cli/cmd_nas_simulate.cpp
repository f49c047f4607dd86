#include <fstream>
#include <iostream>

#include "cli/cli_args.h"
#include "cli/format.h"
#include "cli/nas_simulate.h"
#include "core/events/run_records.h"
#include "core/nas/nas_job.h"
#include "core/nas/subnet_records.h"
#include "core/trace/chrome_trace.h"
#ifdef PW_HAVE_DB
#include "db/run_writer.h"
#endif
#ifdef PW_HAVE_IPC
#include "cli/ipc/sim_telemetry.h"
#endif

namespace pw::cli {
namespace {
nlohmann::json to_json(const nas::SupernetSimResult& r) {
  return {{"mode", r.mode},
          {"reproducible", r.reproducible},
          {"subnets", r.subnets},
          {"makespan_ms", r.makespan_ms},
          {"subnets_per_s", r.subnets_per_s},
          {"utilisation", r.utilisation},
          {"stage_busy_fraction", r.stage_busy_fraction},
          {"layer_uses", r.layer_uses},
          {"resident_hits", r.resident_hits},
          {"resident_fraction", r.hit_rate()},
          {"loads", r.loads},
          {"load_gib", r.load_gib},
          {"load_stall_ms", r.load_stall_ms},
          {"peak_resident_bytes", r.peak_resident_bytes},
          {"wait_edges", r.waits},
          {"max_in_flight", r.max_in_flight},
          {"events", r.events}};
}
// Events to every output (--trace, --db, --listen).
struct Tee final : EventSink {
  std::vector<EventSink*> sinks;
  void on_event(const Event& e) override {
    for (auto* x : sinks) x->on_event(e);
  }
  void on_memory(std::int32_t stage, std::int64_t t, std::int64_t b) override {
    for (auto* x : sinks) x->on_memory(stage, t, b);
  }
};
}  // namespace

int simulate_supernet_command(const JobSpec& job, const CliArgs& args) {
  const bool json = args.flag("json");
  const auto trace = args.option("trace");
  nas::NasJob nj = nas::prepare_nas_job(job);
  auto mode = nas::supernet_mode(job);
  std::unique_ptr<std::ofstream> trace_file;
  std::unique_ptr<ChromeTraceWriter> writer;
  Tee tee;
  if (trace) {
    trace_file = std::make_unique<std::ofstream>(*trace);
    if (!*trace_file) throw std::runtime_error("cannot write trace \"" + *trace + "\"");
    writer = std::make_unique<ChromeTraceWriter>(*trace_file, job.pipeline.stages, "pipewright simulate " + job.name);
    tee.sinks.push_back(writer.get());
  }
  // Dependency data (subnet phases, wait edges) to the recorder and telemetry.
  std::vector<std::function<void(int, const std::vector<int>&)>> on_subnet;
  std::vector<std::function<void(const SubnetState&)>> on_state;
  std::vector<std::function<void(const SubnetEdge&)>> on_edge;
  const std::string run_id = new_run_id();
#ifdef PW_HAVE_DB
  std::unique_ptr<db::RunWriter> rec;
  if (auto path = args.option("db")) {
    db::RunWriterOptions o;
    o.overwrite = args.flag("overwrite");  // only ever a Pipewright run database
    rec = std::make_unique<db::RunWriter>(*path, db::RunInfo{run_id, job.name, "simulate", job.pipeline.stages}, o);
    rec->job(job.raw);
    tee.sinks.push_back(rec.get());
    on_subnet.push_back([&](int id, const std::vector<int>& c) { rec->subnet(id, nlohmann::json(c)); });
    on_state.push_back([&](const SubnetState& x) { rec->subnet_state(x); });
    on_edge.push_back([&](const SubnetEdge& e) { rec->subnet_edge(e); });
  }
#else
  if (args.option("db")) throw UsageError("--db: this pipewright was built without SQLite");
#endif
#ifdef PW_HAVE_IPC
  std::unique_ptr<SimTelemetry> tel;
  if (auto ep = args.option("listen")) {
    tel = std::make_unique<SimTelemetry>(*ep, args.flag("allow-remote"), run_id, 0, nullptr);
    tel->publisher().set_run_info(job.name, job.pipeline.stages, "simulate", args.option("db").value_or(""));
    tel->publisher().status(RunStatus::Running);
    tee.sinks.push_back(&tel->publisher());
    on_state.push_back([&](const SubnetState& x) { tel->publisher().subnet_state(x); });
    on_edge.push_back([&](const SubnetEdge& e) { tel->publisher().subnet_edge(e); });
    std::cerr << "telemetry " << tel->telemetry_endpoint() << "  control " << tel->control_endpoint() << std::endl;
  }
#else
  if (args.option("listen")) throw UsageError("--listen: this pipewright was built without ZeroMQ/protobuf");
#endif
  nas::SubnetRecorder deps({[&](int id, const std::vector<int>& c) { for (auto& f : on_subnet) f(id, c); },
                            [&](const SubnetState& x) { for (auto& f : on_state) f(x); },
                            [&](const SubnetEdge& e) { for (auto& f : on_edge) f(e); }});
  bool recording = !on_state.empty();
  auto r = nas::simulate_supernet(nas::supernet_sim_input(nj, mode), tee.sinks.empty() ? nullptr : &tee,
                                  recording ? &deps : nullptr);
  deps.finish();
  if (writer) writer->finish();
  auto seq_in = nas::supernet_sim_input(nj, nas::SupernetMode::Sequential);
  auto seq = nas::simulate_supernet(seq_in);
  double samples = job.training.batch_size;
  auto finish_outputs = [&] {
    ThroughputSample tp{static_cast<std::int64_t>(r.makespan_ms * 1e6), 1, r.subnets_per_s * samples,
                        r.subnets_per_s > 0 ? 1000.0 / r.subnets_per_s : 0};
#ifdef PW_HAVE_DB
    if (rec) {
      rec->throughput(tp);
      nlohmann::json sum = to_json(r);
      sum["job"] = job.name;
      rec->summary(sum);
      rec->finish(RunStatus::Finished, "");
    }
#endif
#ifdef PW_HAVE_IPC
    if (tel) {
      tel->publisher().throughput(tp);
      tel->finish(RunStatus::Finished, "", 0);
    }
#endif
  };
  if (json) {
    nlohmann::json j = to_json(r);
    j["job"] = job.name;
    j["space"] = {{"kind", nj.space.kind}, {"choice_layers", nj.space.size()}, {"max_choices", nj.space.max_choices()},
                  {"log10_subnets", nj.space.log10_subnets()}};
    j["samples_per_s"] = r.subnets_per_s * samples;
    j["sequential"] = to_json(seq);
    j["speedup_over_sequential"] = seq.subnets_per_s > 0 ? r.subnets_per_s / seq.subnets_per_s : 0;
    nlohmann::json st = nlohmann::json::array();
    for (const auto& s : nj.stages) st.push_back({{"first_layer", s.first}, {"last_layer", s.last}});
    j["stages"] = st;
    if (trace) j["trace"] = *trace;
    if (auto path = args.option("db")) j["db"] = *path, j["run_id"] = run_id;
    j["recorded_subnet_states"] = deps.states();
    j["recorded_wait_edges"] = deps.edges();
    finish_outputs();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "job " << job.name << ": supernet " << nj.space.kind << ", " << nj.space.size()
            << " choice layers, up to " << nj.space.max_choices() << " choices (10^" << fixed(nj.space.log10_subnets(), 1)
            << " subnets), " << job.pipeline.stages << " stages x " << job.cluster.device.preset << ", " << r.mode
            << ", " << r.subnets << " subnets" << (r.reproducible ? "" : " (NOT reproducible)") << "\n\n"
            << "  subnets/s       " << fixed(r.subnets_per_s, 2) << "  (" << fixed(r.subnets_per_s * samples, 1)
            << " samples/s; sequential " << fixed(seq.subnets_per_s, 2) << ", x"
            << fixed(seq.subnets_per_s > 0 ? r.subnets_per_s / seq.subnets_per_s : 0, 2) << ")\n"
            << "  utilisation     " << pct(r.utilisation) << "\n"
            << "  resident        " << pct(r.hit_rate()) << " of candidate uses already on the device\n"
            << "  load stalls     " << fixed(r.load_stall_ms, 1) << " ms, " << r.loads << " loads ("
            << fixed(r.load_gib, 2) << " GiB)\n"
            << "  in flight       " << r.max_in_flight << " subnets at most, " << r.waits << " CSP waits\n\n"
            << "  stage  layers    busy   peak resident\n";
  for (size_t s = 0; s < nj.stages.size(); ++s) {
    std::string layers = std::to_string(nj.stages[s].first) + "-" + std::to_string(nj.stages[s].last);
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 8 ? 8 - layers.size() : 1, ' ')
              << pad(pct(r.stage_busy_fraction[s]), 6) << pad(gib(r.peak_resident_bytes[s]), 16) << "\n";
  }
  if (trace) std::cout << "\nChrome trace: " << *trace << "\n";
  if (recording)
    std::cout << "\nrecorded " << deps.states() << " subnet states, " << deps.edges() << " wait edges"
              << (args.option("db") ? " into " + *args.option("db") : std::string()) << "\n";
  finish_outputs();
  return 0;
}

}  // namespace pw::cli
