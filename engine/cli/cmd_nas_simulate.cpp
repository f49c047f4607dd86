#include <iostream>
#include <memory>

#include "cli/format.h"
#include "cli/job_inputs.h"
#include "cli/nas_simulate.h"
#include "core/events/run_records.h"
#include "core/nas/cache_prediction.h"
#include "core/nas/nas_job.h"
#include "core/nas/subnet_records.h"
#include "core/trace/chrome_trace.h"
#include "cli/run_outputs.h"
#include "cli/sim_control.h"
#include "core/nas/supernet_run_info.h"

namespace pw::cli {
namespace {
nlohmann::json to_json(const nas::SupernetSimResult& r) {
  nlohmann::json stage_cache = nlohmann::json::array();
  for (const auto& f : r.stage_cache) stage_cache.push_back(nas::to_json(f));
  return {{"mode", r.mode},
          {"eviction", r.eviction},
          {"cache_model", r.cache_model},
          {"stage_cache", stage_cache},
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
// Candidate budgets and traffic run from KiB (a CPU supernet) to tens of GiB.
std::string size(double bytes) {
  return bytes >= 1024.0 * 1024 * 1024 ? gib(static_cast<std::uint64_t>(bytes))
                                       : fixed(bytes / (1024.0 * 1024), 2) + " MiB";
}
}  // namespace

int simulate_supernet_command(const JobSpec& job, const SimulateArgs& args) {
  const bool json = args.json;
  const std::string& trace = args.trace;
  nas::NasJob nj = nas::prepare_nas_job(job);
  auto mode = nas::supernet_mode(job);
  // The output rule for --trace (core/io/checked_write.h), checked before any work.
  std::unique_ptr<OutputStream> trace_file;
  std::unique_ptr<ChromeTraceWriter> writer;
  if (!trace.empty()) {
    trace_file = std::make_unique<OutputStream>(trace_target(args, job_inputs(args.job_file, job)));
    writer = std::make_unique<ChromeTraceWriter>(trace_file->stream(), job.pipeline.stages, "pipewright simulate " + job.name);
  }
  RunOutputs outputs(args.outputs, {new_run_id(), job.name, "simulate", job.pipeline.stages});
  if (outputs.recording()) {
    nlohmann::json profile = nas::supernet_profile_json(nj), plan = nas::supernet_plan_json(nj);
    outputs.begin(job.raw, &profile, &plan);
  }
  // As the pipeline's simulate (cmd_simulate.cpp): signals, --listen's control and --pace.
  SimulationControl control(outputs, args.pace);
  if (writer) control.add(writer.get());
  if (outputs.recording()) control.add(&outputs.recorder());
  // Dependency data (subnet phases, wait edges) to the recorder and telemetry.
  RunRecorder& rec = outputs.recorder();
  nas::SubnetRecorder deps({[&](int id, const std::vector<int>& c) { rec.subnet(id, nlohmann::json(c)); },
                            [&](const SubnetState& x) { rec.subnet_state(x); },
                            [&](const SubnetEdge& e) { rec.subnet_edge(e); }});
  const bool recording = outputs.recording();
  nas::SupernetSimResult r;
  if (!control.run([&] {
        r = nas::simulate_supernet(nas::supernet_sim_input(nj, mode), control.sink(), recording ? &deps : nullptr);
        deps.finish();
        if (writer) {
          writer->finish();
          trace_file->commit();  // a full disk shows here, not as a truncated file and exit 0
        }
      }))
    return 1;  // stopped by a control client
  auto seq_in = nas::supernet_sim_input(nj, nas::SupernetMode::Sequential);
  auto seq = nas::simulate_supernet(seq_in);
  double samples = job.training.batch_size;
  auto finish_outputs = [&] {
    rec.throughput({static_cast<std::int64_t>(r.makespan_ms * 1e6), 1, r.subnets_per_s * samples,
                    r.subnets_per_s > 0 ? 1000.0 / r.subnets_per_s : 0});
    nlohmann::json sum = to_json(r);
    sum["job"] = job.name;
    // Last: a lingering run keeps serving late joiners after the printout.
    std::cout.flush();
    outputs.finish(RunStatus::Finished, "", &sum, args.linger_s);
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
    if (!trace.empty()) j["trace"] = trace;
    if (!args.outputs.db_path.empty()) j["db"] = args.outputs.db_path, j["run_id"] = outputs.run_id();
    j["recorded_subnet_states"] = deps.states();
    j["recorded_wait_edges"] = deps.edges();
    std::cout << j.dump(2) << "\n";
    finish_outputs();
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
            << "  in flight       " << r.max_in_flight << " subnets at most, " << r.waits << " CSP waits\n"
            << "  device cache    " << r.eviction << " eviction, " << r.cache_model << " loads, budget "
            << size(nj.budget_bytes) << " per stage\n\n"
            << "  stage  layers    busy   peak resident    uses    hits   loads   evicted       loaded  stall ms\n";
  for (size_t s = 0; s < nj.stages.size(); ++s) {
    std::string layers = std::to_string(nj.stages[s].first) + "-" + std::to_string(nj.stages[s].last);
    const auto& c = r.stage_cache[s];
    std::cout << pad(std::to_string(s), 7) << "  " << layers << std::string(layers.size() < 8 ? 8 - layers.size() : 1, ' ')
              << pad(pct(r.stage_busy_fraction[s]), 6) << pad(gib(r.peak_resident_bytes[s]), 16)
              << pad(std::to_string(c.uses), 8) << pad(std::to_string(c.hits), 8) << pad(std::to_string(c.loads), 8)
              << pad(std::to_string(c.evictions), 10) << pad(size(c.load_bytes), 13)
              << pad(fixed(c.stall_ms, 1), 10) << "\n";
  }
  if (!trace.empty()) std::cout << "\nChrome trace: " << trace << "\n";
  if (recording)
    std::cout << "\nrecorded " << deps.states() << " subnet states, " << deps.edges() << " wait edges"
              << (args.outputs.db_path.empty() ? std::string() : " into " + args.outputs.db_path) << "\n";
  finish_outputs();
  return 0;
}

}  // namespace pw::cli
