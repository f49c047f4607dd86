#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace pw::rt {

// What a stage's memory budget is checked against: the bytes the
// allocator of the stage's device holds for tensors, and their high-water
// mark. On CPU that is the counting allocator (TensorBytes, memory.h); on
// CUDA the caching allocator's own statistics (cuda/cuda_memory.cpp), so
// the budget means the same thing on both: bytes handed out to tensors,
// not what the allocator has cached or reserved around them.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::int64_t live() const = 0;
  // Highest live() since the last reset_peak().
  virtual std::int64_t peak() const = 0;
  virtual void reset_peak() = 0;
  // Where the numbers come from, for messages ("cuda:0 caching allocator").
  virtual std::string source() const = 0;
};

// The meter of the device a stage's tensors live on (one per device, for
// the process's lifetime). CPU needs TensorBytes::install() first for its
// numbers to mean anything. Throws std::invalid_argument for a device this
// build cannot meter (CUDA without PW_WITH_CUDA, other device types).
DeviceMemory& device_memory(const c10::Device& device);

}  // namespace pw::rt
