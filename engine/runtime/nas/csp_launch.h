#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <optional>
#include <stdexcept>

#include "core/events/event.h"
#include "core/nas/supernet_sim.h"
#include "core/nas/subnet_observer.h"

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
  // Set by another thread (a control client's stop): the workers are ended
  // as on SIGINT and launch_csp_run throws CspStopped. May be null.
  const std::atomic<bool>* stop = nullptr;
};

struct CspRunResult {
  std::vector<std::uint64_t> stage_hashes;  // per stage, parameters held there
  std::vector<float> losses;                // per subnet, in sequence order
  double seconds = 0;                       // stage 0's training time
  int subnets = 0;
  // Per stage, its device cache's measured figures; nullopt where the stage
  // held its whole slice (budget at or above it) and ran without one.
  std::vector<std::optional<pw::nas::StageCacheFigures>> device_cache;
  double subnets_per_s() const { return seconds > 0 ? subnets / seconds : 0; }
};

// SIGINT or SIGTERM reached the launcher: the workers were ended.
struct CspInterrupted : std::runtime_error {
  explicit CspInterrupted(int sig);
  int signal;
};

// A stop request (CspLaunch::stop) ended the workers.
struct CspStopped : std::runtime_error {
  CspStopped() : std::runtime_error("stopped by control request") {}
};

// Starts a private FileStore (runtime/rendezvous.h), spawns `workers` processes of
// the worker binary, waits for them and reads their results. Throws
// std::runtime_error naming the stage that failed first and how ("stage 1
// worker killed by signal 9", "stage 0 worker exited with status 1: writing
// subnet records F: No space left on device", "stage 1 worker stopped
// responding (stopped by signal 19)"), the other workers ended within a
// second; CspInterrupted on SIGINT/SIGTERM, CspStopped on a stop request.
CspRunResult launch_csp_run(const CspLaunch& l);

}  // namespace pw::rt::nas
