#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cli/cli_args.h"
#include "cli/commands.h"
#include "cli/runtime/run_recording.h"
#include "cli/format.h"
#include "core/spec/spec_error.h"
#include "runtime/coordinator.h"
#ifdef PW_HAVE_NAS_RUNTIME
#include "cli/nas/nas_run.h"
#include "core/nas/search_space.h"
#endif

namespace pw::cli {

int cmd_profile(const std::vector<std::string>& args);  // cmd_profile.cpp

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

int positive(const CliArgs& a, const std::string& name, int fallback) {
  auto v = a.option(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    int x = std::stoi(*v, &used);
    if (used == v->size() && x >= 0) return x;
  } catch (...) {
  }
  throw UsageError("--" + name + " needs a non-negative integer, got \"" + *v + "\"");
}
}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  std::set<std::string> flags{"json", "attach", "eval", "quiet"},
      options{"planner", "profile", "run-dir", "checkpoint-every", "resume", "threads", "port", "worker"};
  flags.insert(kRunOutputFlags.begin(), kRunOutputFlags.end());
  options.insert(kRunOutputOptions.begin(), kRunOutputOptions.end());
  CliArgs args(argv, flags, options);
  rt::RunOptions o;
  std::string job_file;
  if (auto r = args.option("resume")) {
    o.resume_dir = *r;
    if (args.positional().empty()) job_file = *r + "/job.json";
  }
  if (job_file.empty()) {
    args.expect_positional(1, "one job file");
    job_file = args.positional()[0];
  }
  o.job = load_job(job_file, args.overrides());
  // Workers train in fp32 (libtorch on CPU): an fp16 job would be planned
  // for half the memory it then takes, so `run` refuses rather than ignore it.
  if (o.job.model.precision != "fp32")
    throw SpecError("model.precision", "`run` trains in fp32; \"" + o.job.model.precision +
                                           "\" (mixed precision) is for plan and simulate of GPU jobs: set \"fp32\"");
#ifdef PW_HAVE_NAS_RUNTIME
  if (nas::is_supernet_job(o.job)) return run_supernet_command(job_file, o.job, args);  // engine/cli/nas/
#endif
  if (auto p = args.option("profile")) o.job.model.profile = *p;
  o.planner = args.option("planner").value_or("");
  o.run_dir = args.option("run-dir").value_or(o.resume_dir.empty() ? default_run_dir(o.job.name) : o.resume_dir);
  o.checkpoint_every = positive(args, "checkpoint-every", 0);
  o.threads_per_worker = positive(args, "threads", 0);
  o.port = positive(args, "port", 0);
  o.attach = args.flag("attach");
  o.eval = args.flag("eval");
  o.worker_binary = args.option("worker").value_or("");
  if (o.attach && o.port == 0) throw UsageError("--attach needs --port (the MASTER_PORT the workers are given)");

  TerminalProgress progress;
  rt::RunObserver* observer = args.flag("quiet") || args.flag("json") ? nullptr : &progress;
  std::unique_ptr<rt::RunObserver> recording;
  rt::RunCommands commands;
  if (args.option("db") || args.option("listen")) {
    RunRecordingOptions ro;
    ro.outputs = run_output_options(args);
    if (!ro.outputs.listen.empty()) {
      ro.commands = &commands;
      o.commands = &commands;
    }
    recording = make_run_recording(ro, observer);
    observer = recording.get();
  }
  rt::RunResult r = rt::run_job(o, observer);
  if (args.flag("json")) {
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
    for (const auto& s : r.stages)
      std::cout << "  stage " << s.value("rank", 0) << ": peak memory " << gib(s.value("peak_bytes", 0ULL))
                << " of " << gib(s.value("budget_bytes", 0ULL)) << "\n";
  }
  if (r.exit_code != 0) std::cerr << "error: " << r.error << "\n";
  return r.exit_code;
}

std::vector<Command> runtime_commands() {
  return {{"run",
           "JOB.json [--planner P] [--profile FILE] [--run-dir DIR] [--checkpoint-every N] [--resume RUN] "
           "[--threads N] [--eval] [--attach --port P] [--worker BIN] [--db RUN.sqlite [--overwrite]] [--listen tcp://127.0.0.1:PORT] "
           "[--allow-remote --curve-dir DIR] "
           "[--json] [--quiet] [--set a.b=v ...]",
           "train the job for real: one libtorch worker process per stage, the plan's schedule and memory policy",
           cmd_run},
          {"profile", "JOB.json -o FILE [--repeats N] [--threads N] [--in-situ ITERATIONS] [--set a.b=v ...]",
           "measure every layer's forward/backward time and bytes on this machine into a profile file",
           cmd_profile}};
}

}  // namespace pw::cli
