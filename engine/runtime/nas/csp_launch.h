#pragma once
#include "runtime/run_commands.h"  // CspLaunch::commands
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "core/events/event.h"
#include "core/nas/supernet_sim.h"
#include "core/nas/subnet_observer.h"
#include "runtime/nas/csp_checkpoints.h"  // CspResumePoint, read_csp_resume_point

namespace pw::rt::nas {

struct CspLaunch {
  std::string worker_binary;  // pw_nas_worker
  std::string job_file;
  std::vector<std::string> overrides;
  int workers = 2;
  std::string out_dir;
  bool csp = true;
  int window = 0;  // 0: the job's; 1: sequential pipeline
  // While the workers run: their subnet states and wait edges, and their
  // events (forward, backward, update per subnet), on one timeline from the
  // launch. Called on the launcher's thread; either may be null.
  pw::nas::SubnetObserver* observer = nullptr;
  pw::EventSink* events = nullptr;
  // Every `checkpoint_every` subnets (0: never) the stages drain to that
  // subnet and save it under out_dir/checkpoint/<k>/; once every stage has,
  // out_dir/checkpoint/meta.json (written atomically) points at it and
  // older ones are removed: the pipeline engine's layout and rule.
  int checkpoint_every = 0;
  // A previous run directory to continue from its newest complete
  // checkpoint (read_csp_resume_point). Its record streams up to the
  // checkpoint are carried into out_dir's (the same directory or another),
  // so the observer and event sink see the whole run, on one timeline that
  // continues where the checkpoint's ended.
  std::string resume_dir;
  // Posted by another thread (the control server, cli/runtime/run_control,
  // as for a pipeline run) and taken while the workers run: a Stop makes
  // stage 0 hold back every subnet it has not started, the stages drain
  // what it had (as for a checkpoint) and end with the weights of a run of
  // that many subnets; launch_csp_run returns normally, `stopped` set. The
  // stages agree on nothing else (Abilities::only_stop). May be null.
  RunCommands* commands = nullptr;
  // The signal asking the run to end (SIGINT, SIGTERM), 0 while none: the
  // workers are ended at once and launch_csp_run throws CspInterrupted. The
  // command owning the process's signals answers it (cli/interrupt.h);
  // null: never.
  std::function<int()> interrupted;
};


struct CspRunResult {
  std::vector<std::uint64_t> stage_hashes;  // per stage, parameters held there
  std::vector<float> losses;                // per subnet, in sequence order (a resumed run: from subnet 0)
  double seconds = 0;                       // stage 0's training time (a resumed run: this launch's)
  int subnets = 0;
  int start_subnet = 0;                     // where this launch started (a checkpoint's subnet when resumed)
  bool stopped = false;                     // a stop request ended it after `subnets` subnets
  // Per stage, its device cache's measured figures; nullopt where the stage
  // held its whole slice (budget at or above it) and ran without one.
  std::vector<std::optional<pw::nas::StageCacheFigures>> device_cache;
  double subnets_per_s() const { return seconds > 0 ? (subnets - start_subnet) / seconds : 0; }
};

// SIGINT or SIGTERM (CspLaunch::interrupted): the workers were ended.
struct CspInterrupted : std::runtime_error {
  explicit CspInterrupted(int sig);
  int signal;
};

// Starts a private FileStore (runtime/rendezvous.h), spawns `workers` processes of
// the worker binary, waits for them and reads their results. Throws
// std::runtime_error naming the stage that failed first and how ("stage 1
// worker killed by signal 9", "stage 0 worker exited with status 1: writing
// subnet records F: No space left on device", "stage 1 worker stopped
// responding (stopped by signal 19)"), the other workers ended within a
// second; CspInterrupted on SIGINT/SIGTERM.
CspRunResult launch_csp_run(const CspLaunch& l);

}  // namespace pw::rt::nas
