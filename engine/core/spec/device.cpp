#include "core/spec/device.h"

namespace pw {
namespace {
constexpr std::uint64_t GiB = 1024ull * 1024 * 1024;

DeviceSpec preset(std::string name, std::uint64_t memory, double tflops, double mem_gbs, double host_gbps,
                  double link_gbps, double latency_us, double penalty, double dispatch_us, double tensor_us) {
  DeviceSpec d;
  d.preset = std::move(name);
  d.memory_bytes = memory;
  d.tflops = tflops;
  d.mem_bandwidth_gbs = mem_gbs;
  d.host_link_gbps = host_gbps;
  d.link_gbps = link_gbps;
  d.link_latency_us = latency_us;
  d.small_batch_penalty = penalty;
  d.layer_dispatch_us = dispatch_us;
  d.optimizer_tensor_us = tensor_us;
  return d;
}

// Effective TFLOP/s are ~45% of the fp16 tensor peak, which is what
// transformer training reaches in practice (Megatron reports 40-52%).
// The per-microbatch terms (docs/planners.md, "Costs per microbatch size"):
// GPUs lose about a quarter per sample at microbatch 1 (Megatron-LM SC'21
// 3.4: 23% for a GPT block on an A100; Mist's L4 operator tables: 29% for a
// 2048x2048 linear at 1 vs 8; torchgpipe's AmoebaNet-D: 16% at 8x smaller
// microbatches), so small_batch_penalty 0.25; a layer phase's kernels take
// ~5 us to launch, and an unfused optimizer step ~10 us per tensor (its
// handful of elementwise kernels). CPUs (libtorch eager): ~20 us of
// dispatch per layer phase and 5 us per tensor, small GEMMs lose ~10%.
//
// link_gbps is per direction, as every use reads it (transfer_ms for one
// activation or gradient, the ring all-reduce's 2 (g - 1) / g of the bytes
// each member sends while it receives as much). NVIDIA's datasheets quote
// NVLink as the total of both directions of all a GPU's links: V100 SXM2
// 300 GB/s (NVLink 2, 6 links x 25 GB/s each way), A100 SXM 600 GB/s
// (NVLink 3, 12 x 25), H100/H200 SXM 900 GB/s (NVLink 4, 18 x 25). Per
// direction that is half: 150 / 300 / 450 GB/s = 1200 / 2400 / 3600
// Gbit/s (the presets carried the totals, 2400 / 4800 / 7200, until
// this was noticed; docs/planners.md has the figures before and after).
// The 2080 Ti box's 100 Gbit/s is PCIe 3 x16's ~12.5 GB/s each way.
const std::vector<DeviceSpec>& presets() {
  static const std::vector<DeviceSpec> p = {
      preset("rtx2080ti", 11 * GiB, 0.45 * 53.8, 616, 128, 100, 10, 0.25, 5, 10),
      preset("v100-32g", 32 * GiB, 0.45 * 125, 900, 128, 1200, 8, 0.25, 5, 10),
      preset("a100-80g", 80 * GiB, 0.45 * 312, 2039, 256, 2400, 6, 0.25, 5, 10),
      preset("h100", 80 * GiB, 0.45 * 989, 3350, 512, 3600, 5, 0.25, 5, 10),
      preset("h200", 141 * GiB, 0.45 * 989, 4800, 512, 3600, 5, 0.25, 5, 10),
      preset("cpu", 16 * GiB, 0.2, 40, 1000, 40, 30, 0.1, 20, 5),
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

double action_overhead_at(const DeviceSpec& d, int b) {
  const auto& t = d.action_overhead_by_microbatch;
  if (t.empty()) return d.action_overhead_us;
  if (b <= t.front().first) return t.front().second;
  if (b >= t.back().first) return t.back().second;
  std::size_t i = 1;
  while (t[i].first < b) ++i;
  const auto& [b0, v0] = t[i - 1];
  const auto& [b1, v1] = t[i];
  return v0 + (v1 - v0) * static_cast<double>(b - b0) / static_cast<double>(b1 - b0);
}

}  // namespace pw
