#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/runtime/run_args.h"
#include "cli/runtime/run_recording.h"
#include "cli/format.h"
#include "cli/interrupt.h"
#include "cli/job_inputs.h"
#include "core/io/checked_write.h"
#include "core/spec/spec_error.h"
#include "runtime/coordinator.h"
#include "runtime/replica_layout.h"
#ifdef PW_HAVE_NAS_RUNTIME
#include "cli/nas/nas_run.h"
#include "core/nas/search_space.h"
#endif

namespace pw::cli {

Action define_profile(Args& args);  // cmd_profile.cpp

namespace {

// Iteration, loss, samples/s and ETA on the terminal: one line rewritten
// in place on a tty, a line every few iterations otherwise (logs, CI).
class TerminalProgress final : public rt::RunObserver {
 public:
  void on_start(const PreparedJob& p, int start) override {
    total_ = p.job.training.iterations;
    tty_ = isatty(STDERR_FILENO);
    every_ = std::max<std::int64_t>(1, total_ / 20);
    std::cerr << "run " << p.job.name << ": " << p.job.model.kind << ", " << p.profile.size() << " layers on "
              << p.job.pipeline.stages << " stage process(es), " << to_string(p.job.pipeline.schedule) << ", "
              << p.job.pipeline.microbatches << " x " << p.job.training.microbatch_size << " samples, planner "
              << p.plan.planner << (start > 0 ? ", resuming at iteration " + std::to_string(start) : "") << "\n";
  }
  void on_iteration(std::int64_t it, double loss, double sps, double eta) override {
    bool last = it + 1 == total_;
    if (!tty_ && !last && (it + 1) % every_ != 0) return;
    std::cerr << (tty_ ? "\r" : "") << "  iter " << (it + 1) << "/" << total_ << "  loss " << fixed(loss, 4) << "  "
              << (sps > 0 ? fixed(sps, 1) : std::string("-")) << " samples/s  ETA "
              << (sps > 0 ? fixed(eta, 1) + " s" : std::string("-")) << (tty_ ? "   " : "\n");
    if (tty_ && last) std::cerr << "\n";
  }
  void on_paused(bool paused) override { line(paused ? "paused (every stage at the same iteration)" : "resumed"); }
  void on_checkpoint(std::int64_t it) override { line("checkpoint complete at iteration " + std::to_string(it)); }
  void on_notice(const std::string& m) override { line("note: " + m); }

 private:
  void line(const std::string& s) { std::cerr << (tty_ ? "\n" : "") << "  " << s << "\n"; }
  std::int64_t total_ = 0, every_ = 1;
  bool tty_ = false;
};

std::string default_run_dir(const std::string& name) {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return "runs/" + name + "-" + buf;
}

// The run directory keeps its own copy of the job (job.json, the overrides
// applied) beside its plan and results: none of those files may be one the
// command reads. `run job.json --run-dir .` once rewrote the user's job.json.
// A resumed run's own job.json is the run's, rewritten as it continues.
void refuse_inputs_in_run_dir(const RunArgs& args, const std::string& job_file, const JobSpec& job) {
  const std::string dir = !args.run_dir.empty() ? args.run_dir : args.resume;
  if (dir.empty()) return;  // a new runs/NAME-TIME
  std::vector<InputFile> inputs = job_inputs(job_file, job);
  if (!args.profile.empty()) inputs.push_back({args.profile, "the profile"});
  std::error_code ec;
  const bool resuming_it = !args.resume.empty() && std::filesystem::equivalent(args.resume, dir, ec);
  for (const char* name : {"job.json", "plan.json", "result.json", "migration.json"}) {
    if (resuming_it && std::string(name) == "job.json") continue;
    try {
      refuse_input((std::filesystem::path(dir) / name).string(), "--run-dir", inputs);
    } catch (const OutputRefused& e) {
      throw OutputRefused(std::string(e.what()) + ": the run directory keeps its own " + name +
                          "; give the run a directory of its own (--run-dir DIR)");
    }
  }
}

int run(const RunArgs& args, const Args& given) {
  rt::RunOptions o;
  std::string job_file = args.job_file;
  o.resume_dir = args.resume;
  if (job_file.empty() && !args.resume.empty()) job_file = args.resume + "/job.json";
  if (job_file.empty()) throw UsageError("JOB.json is required (or --resume RUN_DIR)");
  o.job = load_job(job_file, args.overrides);
  // Workers train in fp32 (libtorch on CPU): an fp16 job would be planned
  // for half the memory it then takes, so `run` refuses rather than ignore it.
  if (o.job.model.precision != "fp32")
    throw SpecError("model.precision", "`run` trains in fp32; \"" + o.job.model.precision +
                                           "\" (mixed precision) is for plan and simulate of GPU jobs: set \"fp32\"");
  refuse_inputs_in_run_dir(args, job_file, o.job);  // before anything is written, pipeline or supernet
  // SIGINT/SIGTERM from here on end the run at the engine's next poll,
  // recorded "interrupted", exit 128 + signal; the handlers go with the scope.
  InterruptScope interrupts;
#ifdef PW_HAVE_NAS_RUNTIME
  if (nas::is_supernet_job(o.job)) return run_supernet_command(job_file, o.job, args, given, interrupts);  // engine/cli/nas/
#endif
  if (!args.profile.empty()) o.job.model.profile = args.profile;
  o.planner = args.planner;
  o.run_dir = !args.run_dir.empty() ? args.run_dir : o.resume_dir.empty() ? default_run_dir(o.job.name) : o.resume_dir;
  o.checkpoint_every = args.checkpoint_every;
  o.threads_per_worker = args.threads;
  o.port = args.port;
  o.attach = args.attach;
  o.eval = args.eval;
  o.worker_binary = args.worker;
  o.interrupted = interrupts.probe();

  TerminalProgress progress;
  rt::RunObserver* observer = args.quiet || args.json ? nullptr : &progress;
  std::unique_ptr<rt::RunObserver> recording;
  rt::RunCommands commands;
  if (!args.outputs.db_path.empty() || !args.outputs.listen.empty()) {
    RunRecordingOptions ro;
    ro.outputs = args.outputs;
    if (!ro.outputs.listen.empty()) {
      ro.commands = &commands;
      o.commands = &commands;
    }
    recording = make_run_recording(ro, observer);
    observer = recording.get();
  }
  rt::RunResult r = rt::run_job(o, observer);
  if (args.json) {
    nlohmann::json j{{"exit_code", r.exit_code}, {"stopped", r.stopped}, {"losses", r.losses}, {"samples_per_s", r.samples_per_s},
                     {"iteration_ms", r.iteration_ms}, {"run_dir", o.run_dir}, {"stages", r.stages}};
    if (!r.error.empty()) j["error"] = r.error;
    if (r.accuracy >= 0) j["accuracy"] = r.accuracy;
    std::cout << j.dump(2) << "\n";
  } else if (r.exit_code == 0) {
    std::cout << (r.stopped ? "stopped on request: " : "done: ") << r.losses.size() << " iterations, final loss "
              << (r.losses.empty() ? std::string("-") : fixed(r.losses.back(), 4)) << ", "
              << fixed(r.samples_per_s, 1) << " samples/s (" << fixed(r.iteration_ms, 2) << " ms/iteration)";
    if (r.accuracy >= 0) std::cout << ", test accuracy " << fixed(100 * r.accuracy, 2) << "%";
    std::cout << "\n  run directory: " << o.run_dir << "\n";
    for (const auto& s : r.stages) {  // one line per worker: "stage 1 replica 0 tensor 1", the parts that apply
      const rt::WorkerRole w{s.value("stage", s.value("rank", 0)), s.value("replica", 0), r.plan.data_parallel,
                             s.value("tensor", 0), r.plan.tensor_parallel};
      std::cout << "  " << w.name() << ": peak memory " << gib(s.value("peak_bytes", 0ULL)) << " of "
                << gib(s.value("budget_bytes", 0ULL)) << "\n";
    }
  }
  if (r.exit_code != 0) std::cerr << "error: " << r.error << "\n";
  return r.exit_code;
}

}  // namespace

Action define_run(Args& args) {
  auto a = std::make_shared<RunArgs>();
  args.positional("JOB.json", a->job_file, "the job file (default with --resume: the run's job.json)", false);
  args.planner(a->planner);
  args.profile(a->profile);
  args.text("--run-dir", a->run_dir, "DIR", "where weights, events and checkpoints go (default runs/NAME-TIME)");
  args.integer("--checkpoint-every", a->checkpoint_every, 1, 1'000'000'000, "N",
               "checkpoint every N iterations (a supernet job: every N subnets)");
  args.text("--resume", a->resume, "RUN_DIR",
            "continue a run (pipeline or supernet) from its last complete checkpoint");
  args.integer("--threads", a->threads, 1, 1024, "N", "intra-op threads per worker (default: libtorch's)");
  args.flag("--eval", a->eval, "report test accuracy at the end");
  args.flag("--attach", a->attach, "wait for workers started elsewhere (pipewright launch) instead of starting them");
  args.integer("--port", a->port, 1, 65535, "P", "the rendezvous port (MASTER_PORT)");
  args.needs("--attach", "--port");
  args.text("--worker", a->worker, "BIN", "the worker program (default: pipewright-worker next to this one)");
  args.run_outputs(a->outputs);
  args.json(a->json);
  args.flag("--quiet", a->quiet, "no progress line");
  args.overrides(a->overrides);
  return [a, &args] { return run(*a, args); };
}

std::vector<Command> runtime_commands() {
  return {{"run", "train the job for real: one libtorch worker process per stage, the plan's schedule and memory policy",
           define_run},
          {"profile", "measure every layer's forward/backward time and bytes on this machine into a profile file",
           define_profile}};
}

}  // namespace pw::cli
