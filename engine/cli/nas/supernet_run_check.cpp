#include "cli/nas/supernet_run_check.h"

#include <filesystem>

#include "core/nas/cache_prediction.h"
#include "core/job/resume_check.h"
#include "core/spec/spec_error.h"

namespace pw::cli {
namespace {

// --threads too: each supernet stage runs one intra-op thread, which keeps
// its kernels deterministic (CSP's reproducibility rests on it).
void refuse_pipeline_options(const Args& given) {
  for (const char* o : {"attach", "eval", "profile", "planner", "port", "threads"})
    if (given.given(std::string("--") + o))
      throw UsageError(std::string("--") + o + " is not supported for a supernet job (it has a search_space); "
                       "supernet runs take --run-dir, --db, --listen, --worker, --json, --quiet, "
                       "--checkpoint-every, --resume");
}

// The checkpoint's partition must be this job's: a resume cannot move
// choice layers between stages.
void check_same_partition(const rt::nas::CspResumePoint& resume, const nas::NasJob& nj) {
  for (size_t r = 0; r < resume.stages.size(); ++r) {
    const auto& st = resume.stages[r];
    const int first = st.at("first_layer").get<int>(), last = st.at("last_layer").get<int>();
    if (first != nj.stages[r].first || last != nj.stages[r].last)
      throw SpecError("pipeline.stages", "stage " + std::to_string(r) + " would hold choice layers " +
                                             std::to_string(nj.stages[r].first) + ".." + std::to_string(nj.stages[r].last) +
                                             ", the checkpoint's holds " + std::to_string(first) + ".." +
                                             std::to_string(last) + "; a resume cannot change the partition");
  }
}

}  // namespace

CheckedSupernetRun check_supernet_run(const JobSpec& job, const RunArgs& args, const Args& given) {
  refuse_pipeline_options(given);
  CheckedSupernetRun run{nas::prepare_nas_job(job), std::nullopt, {}};  // a bad search space fails here
  nas::check_device_budget(run.nas);                                      // and a budget no subnet fits
  // Taken before they are read, held to the end (launch_csp_run shares them).
  for (const std::string& dir : {args.resume, args.run_dir})
    if (!dir.empty() && std::filesystem::is_directory(dir)) run.locks.push_back(RunDirLock::acquire(dir));
  if (!args.resume.empty()) {
    check_resume_compatible(args.resume, job);  // SpecError naming the field, exit 2
    run.resume = rt::nas::read_csp_resume_point(args.resume, job.pipeline.stages);
    check_same_partition(*run.resume, run.nas);
    if (run.resume->subnet >= static_cast<int>(run.nas.sequence.size()))
      throw SpecError("training.iterations", std::to_string(run.nas.sequence.size()) + " subnets, the checkpoint " +
                                                 run.resume->dir + " is at subnet " +
                                                 std::to_string(run.resume->subnet) + ": nothing left to train");
  }
  const auto mode = nas::supernet_mode(job);
  if (mode != nas::SupernetMode::Csp && mode != nas::SupernetMode::Sequential)
    throw UsageError("pipeline.schedule: real supernet training runs the csp schedule (search_space.window 1: one "
                     "subnet at a time); gpipe, 1f1b and pipedream are simulated baselines (pipewright simulate)");
  return run;
}

}  // namespace pw::cli
