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
};

// Trains the job's subnet sequence; throws on any failure.
void run_csp_worker(const CspWorkerConfig& cfg);

}  // namespace pw::rt::nas
