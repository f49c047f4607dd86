// `pipewright run JOB` of a supernet job (one with a search_space), in the
// pipeline run's shape: checked (supernet_run_check.h), configured
// (supernet_launch.h), launched on CSP worker processes
// (runtime/nas/csp_launch.h) with the pipeline run's control handler (cli/runtime/run_control.h),
// progress and throughput (supernet_progress.h), and reported
// (supernet_report.h). `pipewright search` runs the evolutionary search over
// what such a run trained (cmd_nas_search.cpp).
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/nas/nas_run.h"
#include "cli/nas/supernet_launch.h"
#include "cli/nas/supernet_progress.h"
#include "cli/nas/supernet_report.h"
#include "cli/nas/supernet_run_check.h"
#include "cli/run_outputs.h"
#include "cli/runtime/run_control.h"
#include "core/events/run_records.h"
#include "core/io/checked_write.h"
#include "core/nas/subnet_records.h"
#include "core/nas/supernet_run_info.h"
#include "runtime/nas/csp_launch.h"

namespace pw::cli {

int run_supernet_command(const std::string& job_file, const JobSpec& job, const RunArgs& args, const Args& given,
                         const InterruptScope& interrupts) {
  CheckedSupernetRun checked = check_supernet_run(job, args, given);  // every refusal before the first write
  const nas::NasJob& nj = checked.nas;
  rt::nas::CspLaunch l = supernet_launch(job_file, job, args);
  std::filesystem::create_directories(l.out_dir);
  checked.locks.push_back(RunDirLock::acquire(l.out_dir));  // the same lock where it existed
  write_file_atomically(l.out_dir + "/job.json", job.raw.dump(2) + "\n", "job");  // `pipewright search RUN_DIR` reads it
  // A control client's requests, through the pipeline run's handler: its
  // stages agree on a stop at a subnet and nothing else. Outlives the
  // outputs' control server.
  rt::RunCommands commands;
  rt::RunCommands::Abilities can;
  can.only_stop = true;
  commands.set_abilities(can);
  l.commands = &commands;
  RunControl control(commands);
  l.interrupted = interrupts.probe();
  RunOutputs outputs(args.outputs, {new_run_id(), job.name, "run", job.pipeline.stages});
  if (outputs.recording()) {
    nlohmann::json profile = nas::supernet_profile_json(nj), plan = nas::supernet_plan_json(nj);
    outputs.begin(job.raw, &profile, &plan);
  }
  control.serve(outputs);
  RunRecorder& rec = outputs.recorder();
  nas::SubnetRecorder deps({[&](int id, const std::vector<int>& c) { rec.subnet(id, nlohmann::json(c)); },
                            [&](const SubnetState& x) { rec.subnet_state(x); },
                            [&](const SubnetEdge& e) { rec.subnet_edge(e); }});
  const bool talk = !args.json && !args.quiet;
  SupernetProgress progress(outputs.recording() ? &deps : nullptr, outputs.recording() ? &rec : nullptr,
                            static_cast<int>(nj.sequence.size()), job.training.batch_size, talk);
  l.observer = &progress;
  if (outputs.recording()) l.events = &rec;  // events and each stage's memory samples
  if (talk)
    std::cerr << "run " << job.name << ": supernet " << nj.space.kind << ", " << nj.space.size() << " choice layers, "
              << nj.sequence.size() << " subnets on " << l.workers << " CSP worker processes (window "
              << nj.space.window << ")"
              << (checked.resume ? ", resuming at subnet " + std::to_string(checked.resume->subnet) : std::string())
              << "\n";
  auto finish = [&](RunStatus status, const std::string& reason, const nlohmann::json& summary) {
    deps.finish();
    outputs.finish(status, reason, &summary);
  };
  rt::nas::CspRunResult r;
  try {
    r = rt::nas::launch_csp_run(l);
  } catch (const rt::nas::CspInterrupted& e) {
    // As the pipeline engine's run: recorded "interrupted", exit 128 + signal.
    finish(RunStatus::Interrupted, e.what(), {{"error", e.what()}});
    std::cerr << "pipewright run: " << e.what() << "\n";
    return 128 + e.signal;
  } catch (const std::exception& e) {
    finish(RunStatus::Failed, e.what(), {{"error", e.what()}});
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  SupernetRunReport report = supernet_run_report(nj, job, r, l.out_dir, deps.states(), deps.edges());
  // A stop at the agreed subnet is a complete, shorter run (exit 0), as a
  // pipeline run's stop after an iteration.
  if (r.stopped) finish(RunStatus::Stopped, "stopped by control request", report.summary);
  else finish(RunStatus::Finished, "", report.summary);
  if (args.json) {
    std::cout << report.summary.dump(2) << "\n";
    return 0;
  }
  print_supernet_run(std::cout, nj, r, report);
  const std::string& db_path = args.outputs.db_path;
  std::cout << "\n  run directory: " << l.out_dir << "  (pipewright search " << (db_path.empty() ? l.out_dir : db_path)
            << ")\n";
  if (outputs.recording())
    std::cout << "  recorded " << deps.states() << " subnet states, " << deps.edges() << " wait edges"
              << (db_path.empty() ? std::string() : " into " + db_path) << "\n";
  return 0;
}

std::vector<Command> nas_commands() {
  return {{"search",
           "evolutionary subnet search over a trained supernet run (search_space.search), against random search; "
           "stores every scored subnet and the accuracy/latency front in RUN.sqlite",
           define_search},
          {"export-subnet", "one subnet of a searched supernet run as a standalone TorchScript model with its trained weights",
           define_export_subnet}};
}

}  // namespace pw::cli
