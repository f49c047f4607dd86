#include "core/spec/device.h"

namespace pw {
namespace {
constexpr std::uint64_t GiB = 1024ull * 1024 * 1024;

// Effective TFLOP/s are ~45% of the fp16 tensor peak, which is what
// transformer training reaches in practice (Megatron reports 40-52%).
const std::vector<DeviceSpec>& presets() {
  static const std::vector<DeviceSpec> p = {
      {"rtx2080ti", 11 * GiB, 0.45 * 53.8, 616, 128, 100, 10},
      {"v100-32g", 32 * GiB, 0.45 * 125, 900, 128, 2400, 8},
      {"a100-80g", 80 * GiB, 0.45 * 312, 2039, 256, 4800, 6},
      {"h200", 141 * GiB, 0.45 * 989, 4800, 512, 7200, 5},
      {"cpu", 16 * GiB, 0.2, 40, 1000, 40, 30},
  };
  return p;
}
}  // namespace

std::optional<DeviceSpec> device_preset(const std::string& name) {
  for (const auto& d : presets())
    if (d.preset == name) return d;
  return std::nullopt;
}

std::vector<std::string> device_preset_names() {
  std::vector<std::string> names;
  for (const auto& d : presets()) names.push_back(d.preset);
  return names;
}

}  // namespace pw
