#pragma once
// What changed in libtorch between the two the engine builds against, in one
// place: Debian's 1.13 (the default and CI build, CPU only) and the 2.x that
// PyTorch's wheels ship (the GPU machine: torch 2.11.0+cu130, configured with
// -DTorch_DIR=<torch.utils.cmake_prefix_path>/Torch). Everything else the
// engine uses from libtorch is the same in both.
//
// The 2.x facts below were read from PyTorch's sources (github.com/pytorch/
// pytorch, recent main, not compiled here: no 2.x libtorch on this machine):
//  - torch/csrc/distributed/c10d/ProcessGroupGloo.hpp: `class ProcessGroupGloo
//    : public Backend`; send/recv/recvAnysource/barrier/allreduce are Backend
//    virtuals with 1.13's signatures; Options::create(timeout), ->devices,
//    ->threads and createDeviceForHostname/Interface/createDefaultDevice are
//    unchanged (each now takes an optional lazyInit, defaulted).
//  - c10/core/Allocator.h: `virtual DataPtr allocate(size_t n) = 0` (no longer
//    const) and a new pure `virtual void copy_data(void* dest, const void*
//    src, size_t count) const`; raw_deleter() is unchanged.
//  - torch/csrc/api/include/torch/optim/optimizer.h: Optimizer::state() is a
//    ska::flat_hash_map keyed by `void*` (the parameter's TensorImpl), where
//    1.13 keyed it by that address printed as a std::string.
// The versions between (2.0 to 2.3) changed these one at a time and are
// refused below rather than guessed at.
#include <torch/version.h>  // TORCH_VERSION_MAJOR / _MINOR (torch/csrc/api/include in both)

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstring>

#define PW_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if PW_TORCH_AT_LEAST(2, 0) && !PW_TORCH_AT_LEAST(2, 4)
#error "pipewright builds against libtorch 1.13 or >= 2.4 (engine/runtime/torch_compat.h)"
#endif

// PW_COMPAT_CHECK_BACKEND (a compile check only; nothing links with it) makes
// 1.13 compile the engine against c10d::Backend, whose send/recv/barrier/
// allreduce 1.13 already declares, to catch a use that 2.x would refuse.
#if PW_TORCH_AT_LEAST(2, 0) || defined(PW_COMPAT_CHECK_BACKEND)
#define PW_COMM_GROUP_IS_BACKEND 1
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#define PW_COMM_GROUP_IS_BACKEND 0
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#if !PW_TORCH_AT_LEAST(2, 0)
#include <c10/util/string_utils.h>  // c10::guts::to_string, 1.13's optimizer state key
#endif

namespace pw::compat {

// The type the engine sends and receives through (send, recv, barrier,
// allreduce): the process group itself in 1.13, the backend in 2.x, where a
// c10d::ProcessGroup is only a dispatcher over backends and ProcessGroupGloo
// (and ProcessGroupNCCL) derive from c10d::Backend.
#if PW_COMM_GROUP_IS_BACKEND
using CommGroup = c10d::Backend;
#else
using CommGroup = c10d::ProcessGroup;
#endif

// A host (CPU) allocator written once for both: implement allocate_bytes().
// 2.x's Allocator wants a non-const allocate() and a copy_data() (plain
// memcpy: these are host bytes); 1.13's a const allocate().
class HostAllocator : public c10::Allocator {
 public:
  virtual c10::DataPtr allocate_bytes(std::size_t n) const = 0;
#if PW_TORCH_AT_LEAST(2, 0)
  c10::DataPtr allocate(std::size_t n) override { return allocate_bytes(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#else
  c10::DataPtr allocate(std::size_t n) const override { return allocate_bytes(n); }
#endif
};

// The key of a parameter's entry in torch::optim::Optimizer::state().
#if PW_TORCH_AT_LEAST(2, 0)
inline void* optimizer_state_key(const at::Tensor& p) { return p.unsafeGetTensorImpl(); }
#else
inline std::string optimizer_state_key(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }
#endif

}  // namespace pw::compat
