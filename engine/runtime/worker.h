#pragma once
#include <string>

namespace pw::rt {

// Where a worker finds its coordinator: the torchrun-style environment
// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK), or, for the
// workers a local coordinator starts itself, PW_STORE_FILE (a FileStore).
struct WorkerEnv {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  int rank = 0;
  int world_size = 1;
  // The stage's GPU on this host (torchrun's convention; modulo the GPUs
  // the process sees, core/cluster/transport_choice.h); without CUDA only
  // checked (< WORLD_SIZE). Unset: the rank (one host, as `run` starts them).
  int local_rank = 0;
  std::string store_file;  // set: rendezvous through this FileStore, not MASTER_ADDR:MASTER_PORT
};
// Throws std::runtime_error naming a missing or malformed variable.
WorkerEnv worker_env_from_environment();

// The whole life of one stage process: rendezvous, build the stage from
// the config the coordinator published, train, report, save. Returns the
// process exit code (0 ok, 2 job error such as an exceeded memory budget,
// 3 aborted by the coordinator).
int run_worker(const WorkerEnv& env);

}  // namespace pw::rt
