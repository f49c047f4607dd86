#pragma once
#include <string>
#include <vector>

namespace pw {

// How the stages of a run talk and where each one computes, decided once
// from what every stage process found on its host (each worker publishes
// its StageSite, all of them decide the same from the same list). Pure: no
// CUDA or torch here, so every case is tested on a machine without a GPU.

// What one stage process sees.
struct StageSite {
  std::string host;      // stages naming the same host share its GPUs
  int local_rank = 0;    // torchrun's LOCAL_RANK: which of the host's GPUs is this stage's
  int visible_gpus = 0;  // CUDA devices the process sees; 0: no CUDA (or a CPU-only libtorch)
};

struct StagePlacement {
  int cuda_index = -1;  // -1: the CPU
  // The transport (Gloo) moves host memory only: a GPU stage's tensors are
  // copied to the host to be sent and back to its GPU when received.
  bool host_staged = false;
  std::string device() const { return cuda_index < 0 ? "cpu" : "cuda:" + std::to_string(cuda_index); }
};

struct TransportChoice {
  std::string backend;                 // "gloo" | "nccl"
  std::vector<StagePlacement> stages;  // by rank
  std::string reason;                  // one line for the log: "nccl: 4 stages, one GPU each"
};

// What cluster.backend accepts: auto, gloo, nccl.
std::vector<std::string> transport_backend_choices();

// A stage computes on GPU local_rank mod visible_gpus (several stages on a
// host with fewer GPUs share them), or on the CPU without one. `requested`:
//  - "nccl": NCCL between GPUs; refused (SpecError naming cluster.backend)
//    when a stage sees no GPU, when this build has no NCCL (`nccl_built`),
//    or when two stages share a GPU (NCCL cannot send within one device).
//  - "gloo": Gloo; GPU stages host-staged.
//  - "auto": NCCL when every stage has a GPU of its own and NCCL is built,
//    Gloo otherwise (host-staged for the stages on a GPU).
// Throws std::invalid_argument for an empty list or a negative field.
TransportChoice choose_transport(const std::string& requested, const std::vector<StageSite>& stages,
                                 bool nccl_built);

}  // namespace pw
