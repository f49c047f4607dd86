// A CUDA device's memory as its caching allocator counts it. Compiled only
// with a CUDA libtorch (PW_WITH_CUDA).
//
// API (verified against pytorch's c10/cuda/CUDACachingAllocator.h, 1.13
// through 2.9): c10::cuda::CUDACachingAllocator::getDeviceStats(device)
// returns DeviceStats (since 2.5 it is c10::CachingDeviceAllocator::DeviceStats,
// re-exported by a using-declaration); allocated_bytes is a StatArray
// indexed by StatType, AGGREGATE = 0, each Stat with `current` and `peak`;
// resetPeakStats(device) sets every peak to its current. The device
// parameter is int in 1.13-2.3 and c10::DeviceIndex later: a DeviceIndex
// converts to either.
#include <c10/cuda/CUDACachingAllocator.h>

#include "runtime/cuda/cuda_backends.h"

namespace pw::rt::cuda {
namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;
constexpr std::size_t kAggregate = 0;  // StatType::AGGREGATE: small and large pools together

// allocated_bytes, not reserved_bytes: what tensors hold, as the CPU meter
// counts, so a budget means the same on both; the cache around it is the
// allocator's business (and would make the peak depend on history).
class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(c10::DeviceIndex index) : index_(index) {}
  std::int64_t live() const override { return alloc::getDeviceStats(index_).allocated_bytes[kAggregate].current; }
  std::int64_t peak() const override { return alloc::getDeviceStats(index_).allocated_bytes[kAggregate].peak; }
  void reset_peak() override { alloc::resetPeakStats(index_); }
  std::string source() const override { return "cuda:" + std::to_string(index_) + " caching allocator"; }

 private:
  c10::DeviceIndex index_;
};

}  // namespace

std::unique_ptr<DeviceMemory> make_memory(c10::DeviceIndex index) { return std::make_unique<CudaMemory>(index); }

}  // namespace pw::rt::cuda
