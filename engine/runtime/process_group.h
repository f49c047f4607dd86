#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

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

}  // namespace pw::rt
