#include <csignal>
#include <iostream>

#include "runtime/worker.h"

// One pipeline stage. Started by `pipewright run` (fork/exec) or by a
// launcher that sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
int main(int argc, char** argv) {
  // A file-size limit fails a checkpoint write with EFBIG (named with the
  // file by the checked writer) rather than killing the stage with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // A write to a peer that already died fails with EPIPE, which the
  // transport raises as a lost peer (FailureKind::PeerLost), instead of
  // killing this stage silently: the coordinator then blames the stage whose
  // failure is its own, not the first one to die of it.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return pw::rt::run_worker(pw::rt::worker_env_from_environment());
  } catch (const std::exception& e) {
    std::cerr << "pipewright-worker: " << e.what() << "\n";
    return 2;
  }
}
