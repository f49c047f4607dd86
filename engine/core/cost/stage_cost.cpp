#include "core/cost/stage_cost.h"

#include <algorithm>

namespace pw {

StageCost stage_cost(const ModelProfile& profile, const StageRange& range, const std::vector<MemoryPolicy>& policy) {
  StageCost c;
  for (int l = range.first_layer; l <= range.last_layer; ++l) {
    const auto& p = profile.layers[l];
    c.fwd_ms += p.fwd_ms;
    c.bwd_ms += p.bwd_ms;
    double w = weight_grad_ms(p);
    c.bwd_weight_ms += w;
    c.bwd_input_ms += p.bwd_ms - w;
    (policy[l] == MemoryPolicy::Swap ? c.w_stash_swap_bytes_per_mb : c.w_stash_bytes_per_mb) += w_stash_bytes(p);
    c.optimizer_ms += p.optimizer_ms;
    c.param_bytes += p.param_bytes;
    c.static_bytes += 2 * p.param_bytes + p.optimizer_bytes;
    c.workspace_bytes = std::max(c.workspace_bytes, p.workspace_bytes);
    c.tensor_fwd_ms += p.tensor_fwd_ms;
    c.tensor_bwd_ms += p.tensor_bwd_ms;
    c.tensor_fwd_bytes += p.tensor_fwd_bytes;
    c.tensor_bwd_bytes += p.tensor_bwd_bytes;
    if (policy[l] == MemoryPolicy::Recompute) {
      c.tensor_recompute_ms += p.tensor_fwd_ms;
      c.tensor_recompute_bytes += p.tensor_fwd_bytes;
    }
    switch (policy[l]) {
      case MemoryPolicy::Keep: c.kept_bytes_per_mb += p.activation_bytes; break;
      case MemoryPolicy::Recompute:
        c.kept_bytes_per_mb += p.input_bytes;
        c.recompute_ms += p.fwd_ms;
        c.recompute_peak_bytes = std::max(c.recompute_peak_bytes, p.activation_bytes);
        break;
      case MemoryPolicy::Swap: c.swap_bytes_per_mb += p.activation_bytes; break;
      case MemoryPolicy::Selective:
        c.kept_bytes_per_mb += p.activation_bytes - std::min(p.activation_bytes, p.core_activation_bytes);
        if (p.core_activation_bytes == 0) break;
        c.recompute_ms += p.core_fwd_ms;
        c.recompute_peak_bytes = std::max(c.recompute_peak_bytes, p.core_activation_bytes);
        break;
    }
  }
  c.output_bytes = profile.boundary_bytes(range.last_layer);
  c.transfer_buffer_bytes = transfer_buffer_bytes(profile, range.first_layer, range.last_layer);
  return c;
}

std::uint64_t transfer_buffer_bytes(const ModelProfile& profile, int first_layer, int last_layer) {
  return 2 * (profile.boundary_bytes(first_layer - 1) + profile.boundary_bytes(last_layer));
}

double send_cpu_ms(const DeviceSpec& device, std::uint64_t bytes) {
  double ms = device.send_cpu_us * 1e-3;
  if (device.send_cpu_gbps > 0) ms += bytes * 8.0 / (device.send_cpu_gbps * 1e9) * 1e3;
  return ms;
}

double transfer_ms(std::uint64_t bytes, double gbps, double latency_us) {
  if (bytes == 0) return 0;
  return latency_us * 1e-3 + static_cast<double>(bytes) * 8.0 / (gbps * 1e9) * 1e3;
}

std::uint64_t peak_memory_bound(const StageCost& c, int in_flight, int weight_versions) {
  std::uint64_t stash = static_cast<std::uint64_t>(std::max(0, weight_versions - 1)) * c.param_bytes;
  // During a forward: its own offload, the one before still going out, and
  // the next action's reload (3 buffers); during a backward (or a W): two
  // buffers plus the rematerialised activation and the backward's own
  // workspace. A buffer is a microbatch's offloaded activations or its
  // offloaded W stash, whichever is larger.
  std::uint64_t S = std::max(c.swap_bytes_per_mb, c.w_stash_swap_bytes_per_mb);
  std::uint64_t backward = c.recompute_peak_bytes + c.workspace_bytes;
  std::uint64_t transient = S ? 2 * S + std::max(S, backward) : backward;
  return c.static_bytes + c.transfer_buffer_bytes + stash + static_cast<std::uint64_t>(in_flight) * c.kept_bytes_per_mb + transient;
}

}  // namespace pw
