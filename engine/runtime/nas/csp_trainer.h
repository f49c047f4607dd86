#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pw::rt::nas {

// One process of a CPU supernet pipeline: stage `rank` of `world`, trained
// under core's CspStage (the same policy object the supernet simulator
// drives), tensors over c10d Gloo point-to-point on 127.0.0.1.
struct CspWorkerConfig {
  std::string job_file;
  std::vector<std::string> overrides;  // "a.b=v", applied before validation
  int rank = 0;
  int world = 1;
  std::string store_file;  // the launcher's FileStore (nothing listens on the network)
  std::string out_dir;    // stage<r>.json: parameter hash, losses (last stage), timing
  bool csp = true;        // false: no conflict test (a racing, non-reproducible schedule)
  int window = 0;         // 0: search_space.window; 1: one subnet at a time
  int threads = 1;        // intra-op threads (1 keeps kernels deterministic)
  std::int64_t t0_ns = -1;  // the launcher's steady-clock origin for records (-1: this worker's start)
  // Checkpoints: every `checkpoint_every` subnets (0: none) the pipeline
  // drains to that subnet and each stage writes its weights, optimizer
  // state and record position into checkpoint_dir/<k>/stage<r>.{bin,json}
  // through the checked writer (the launcher marks a checkpoint complete).
  int checkpoint_every = 0;
  std::string checkpoint_dir;
  // A resumed run: the checkpoint directory (checkpoint_dir/<k> of the
  // interrupted run) to start from; empty: from the first subnet. The
  // launcher has already cut this stage's record stream back to it.
  std::string resume_from;
  // The launcher's stop request (created empty when a control client asks
  // the run to stop). Stage 0, seeing it, holds back every subnet it has not
  // started and writes that subnet's id, k, to stop_file + ".at"; every stage
  // drains to k (as to a checkpoint) and ends with the state of a run of k
  // subnets. Empty: no stop.
  std::string stop_file;
};

// One stage's checkpoint file names within a checkpoint directory.
std::string checkpoint_state_file(const std::string& dir, int rank);  // stage<r>.bin
std::string checkpoint_meta_file(const std::string& dir, int rank);   // stage<r>.json (written last)

// Trains the job's subnet sequence; throws on any failure. Returns true
// when a stop request ended it early: its receivers still wait for the
// subnets never sent, so the caller must end the process with _Exit (the
// trainer is left to it, not destroyed).
bool run_csp_worker(const CspWorkerConfig& cfg);

}  // namespace pw::rt::nas
