#include <csignal>
#include <iostream>

#include "runtime/worker.h"

// One pipeline stage. Started by `pipewright run` (fork/exec) or by a
// launcher that sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
int main(int argc, char** argv) {
  // A file-size limit fails a checkpoint write with EFBIG (named with the
  // file by the checked writer) rather than killing the stage with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return pw::rt::run_worker(pw::rt::worker_env_from_environment());
  } catch (const std::exception& e) {
    std::cerr << "pipewright-worker: " << e.what() << "\n";
    return 2;
  }
}
