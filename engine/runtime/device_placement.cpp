#include "runtime/device_placement.h"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace pw::rt {

StageDevice StageDevice::from(const TransportChoice& choice, int rank) {
  const StagePlacement& p = choice.stages.at(rank);
  StageDevice d;
  d.device = p.cuda_index < 0 ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(p.cuda_index));
  d.host_staged = p.host_staged;
  d.backend = choice.backend;
  d.reason = choice.reason;
  return d;
}

std::string StageDevice::describe() const { return reason + "; stage on " + device.str(); }

at::Tensor recv_buffer(at::IntArrayRef shape, const StageDevice& d) {
  if (d.wire().is_cpu()) return at::empty(shape);  // exactly the CPU engine's buffer
  return at::empty(shape, at::TensorOptions().device(d.wire()));
}

at::Tensor from_wire(const at::Tensor& t, const StageDevice& d) {
  return t.device() == d.device ? t : t.to(d.device);
}

at::Tensor to_wire(const at::Tensor& t, const StageDevice& d) {
  return t.device() == d.wire() ? t.contiguous() : t.to(d.wire()).contiguous();
}

at::Tensor on_device(const at::Tensor& t, const StageDevice& d) {
  return !t.defined() || t.device() == d.device ? t : t.to(d.device);
}

void make_current(const StageDevice& d) {
  if (d.device.is_cpu()) return;
  c10::impl::getDeviceGuardImpl(d.device.type())->setDevice(d.device);
}

}  // namespace pw::rt
