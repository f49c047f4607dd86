#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pw {

// One accelerator (or CPU socket) as the cost model sees it.
struct DeviceSpec {
  std::string preset;           // "v100-32g", ... or "custom"
  std::uint64_t memory_bytes = 0;
  double tflops = 0;            // effective (achievable) dense TFLOP/s
  double mem_bandwidth_gbs = 0; // device memory bandwidth, GB/s (optimizer step cost)
  double host_link_gbps = 0;    // device<->host link (PCIe), Gbit/s, per direction
  double link_gbps = 0;         // device<->device link, Gbit/s, per direction
  double link_latency_us = 0;   // per transfer
};

// Known presets; nullopt for an unknown name.
std::optional<DeviceSpec> device_preset(const std::string& name);
std::vector<std::string> device_preset_names();

}  // namespace pw
