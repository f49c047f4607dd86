#pragma once
// The CUDA implementations of the runtime's device seams, compiled only
// where CMake found a libtorch built with CUDA (PW_WITH_CUDA): the generic
// code (device_memory.cpp, event_clock.cpp) asks for them by device type.
#include <c10/core/Device.h>

#include <memory>

#include "runtime/device_memory.h"
#include "runtime/event_clock.h"

namespace pw::rt::cuda {

std::unique_ptr<DeviceMemory> make_memory(c10::DeviceIndex index);
std::unique_ptr<DeviceTimer> make_timer(c10::DeviceIndex index);

}  // namespace pw::rt::cuda
