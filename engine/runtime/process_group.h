#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "runtime/torch_compat.h"

#include <chrono>
#include <memory>
#include <string>

namespace pw::rt {

// The one place the engine builds a c10d process group for tensors between
// stages (stage workers, the CSP trainer, the profiler's link probe), so
// that timeouts, threads and the device choice are decided once. `prefix`
// keeps groups sharing a store apart; `device` defaults to loopback (the
// caller passes gloo_device(env) for a run, which follows torch.distributed's
// rules for multi-host runs).
struct GlooGroupOptions {
  std::string prefix;  // store key prefix; empty: the store as given
  std::chrono::seconds timeout{300};
  int threads = 2;
  std::shared_ptr<::gloo::transport::Device> device;  // null: 127.0.0.1
};

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int world, const GlooGroupOptions& options);

// The group for the run's chosen backend (core/cluster/transport_choice.h):
// "gloo" as make_gloo_group, "nccl" an NCCL group (its timeout and prefix
// from `options`; the stage's GPU must be current, device_placement.h's
// make_current). Throws std::runtime_error for "nccl" in a build without it.
c10::intrusive_ptr<compat::CommGroup> make_process_group(const std::string& backend,
                                                          const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                          int world, const GlooGroupOptions& options);

// Whether this build makes NCCL groups: configured against a CUDA libtorch
// that ships c10d's ProcessGroupNCCL (CMake sets PW_WITH_NCCL).
bool nccl_built();

}  // namespace pw::rt
