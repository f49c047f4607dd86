#include "runtime/device_memory.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "runtime/memory.h"
#ifdef PW_WITH_CUDA
#include "runtime/cuda/cuda_backends.h"
#endif

namespace pw::rt {
namespace {

class CpuMemory final : public DeviceMemory {
 public:
  std::int64_t live() const override { return TensorBytes::live(); }
  std::int64_t peak() const override { return TensorBytes::peak(); }
  void reset_peak() override { TensorBytes::reset_peak(); }
  std::string source() const override { return "cpu counting allocator"; }
};

}  // namespace

DeviceMemory& device_memory(const c10::Device& device) {
  if (device.is_cpu()) {
    static CpuMemory cpu;
    return cpu;
  }
#ifdef PW_WITH_CUDA
  if (device.is_cuda()) {
    static std::mutex m;
    static std::map<c10::DeviceIndex, std::unique_ptr<DeviceMemory>> meters;
    std::lock_guard<std::mutex> lock(m);
    // An unindexed "cuda" is the device the process works on: index 0 of
    // what CUDA_VISIBLE_DEVICES leaves it (workers pick theirs by index).
    c10::DeviceIndex i = device.has_index() ? device.index() : 0;
    auto& meter = meters[i];
    if (!meter) meter = cuda::make_memory(i);
    return *meter;
  }
#endif
  throw std::invalid_argument("no memory meter for device " + device.str() +
                              (device.is_cuda() ? " (this build's libtorch has no CUDA)" : ""));
}

}  // namespace pw::rt
