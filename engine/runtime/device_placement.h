#pragma once
#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <string>

#include "core/cluster/transport_choice.h"

namespace pw::rt {

// Where one stage computes and how its tensors reach the transport, from
// the run's TransportChoice (core/cluster/transport_choice.h). The default
// is today's CPU stage over Gloo: every helper below is then the identity
// (bar contiguous() for a send), so CPU runs are bitwise what they were.
struct StageDevice {
  c10::Device device{c10::kCPU};
  bool host_staged = false;  // Gloo carries a GPU stage's tensors through host copies
  std::string backend = "gloo";
  std::string reason = "gloo: no CUDA";

  static StageDevice from(const TransportChoice& choice, int rank);
  // Where the transport reads and writes this stage's tensors.
  c10::Device wire() const { return host_staged ? c10::Device(c10::kCPU) : device; }
  // "gloo: no CUDA; stage on cpu" for the worker's log line.
  std::string describe() const;
};

// A (float) receive buffer where the transport writes.
at::Tensor recv_buffer(at::IntArrayRef shape, const StageDevice& d);
// A received tensor where the stage computes: a host-staged one is copied to its GPU.
at::Tensor from_wire(const at::Tensor& t, const StageDevice& d);
// A tensor to send: contiguous, where the transport reads it (a host copy when staged).
at::Tensor to_wire(const at::Tensor& t, const StageDevice& d);
// A tensor (data batch, test slice) moved to where the stage computes.
at::Tensor on_device(const at::Tensor& t, const StageDevice& d);

// Makes the stage's GPU the process's current CUDA device (NCCL and the
// caching allocator follow it); nothing for a CPU stage. Device-generic
// c10 API: it compiles against a CPU-only libtorch.
void make_current(const StageDevice& d);

}  // namespace pw::rt
