#pragma once
#include <cstdint>
#include <vector>

#include "core/model/layer_profile.h"
#include "core/layout/plan_layout.h"
#include "core/spec/device.h"

namespace pw {

// The cost of one (virtual) stage holding a layer range under a per-layer
// memory policy, per microbatch. The planners and the simulator both use
// this, so a plan's prediction and its simulation agree by construction
// on everything but the schedule's dynamics.
struct StageCost {
  double fwd_ms = 0;
  double bwd_ms = 0;        // backward proper: bwd_input_ms + bwd_weight_ms
  double bwd_input_ms = 0;  // B: gradient of the stage's input (split backward)
  double bwd_weight_ms = 0; // W: gradients of the stage's weights (split backward)
  double recompute_ms = 0;  // extra forward of recomputed layers, in backward
  double optimizer_ms = 0;
  std::uint64_t param_bytes = 0;
  std::uint64_t static_bytes = 0;         // weights + gradients + optimizer state
  std::uint64_t kept_bytes_per_mb = 0;    // stays on device from forward to backward
  std::uint64_t swap_bytes_per_mb = 0;    // goes to host after forward, back before backward
  std::uint64_t recompute_peak_bytes = 0; // largest activation rematerialised during backward
  std::uint64_t workspace_bytes = 0;      // largest backward workspace of the stage's layers
  std::uint64_t output_bytes = 0;         // sent to the next stage per microbatch
  // W's stash under a split backward: per layer, what its weight gradient
  // needs from B until W (w_stash_bytes, by layer kind; B frees the rest of
  // what the forward kept). Split by where it waits:
  //  - w_stash_bytes_per_mb: the layers not on swap, held on the device
  //    from B to W (what the order problem's B turns a unit into);
  //  - w_stash_swap_bytes_per_mb: the swapped layers', which go to the host
  //    after B and come back before W (on the device only while in transit,
  //    or from B to W where W follows its own B at once: the simulator).
  // Both are counted whatever the schedule; only a split backward has them.
  std::uint64_t w_stash_bytes_per_mb = 0;
  std::uint64_t w_stash_swap_bytes_per_mb = 0;
  // Transfers in flight at the stage's two cuts: receives are posted ahead
  // of the actions that need them (so a peer's send never waits), and a
  // sent activation or gradient is held until the peer has taken it. One of
  // each per direction (transfer_buffer_bytes).
  std::uint64_t transfer_buffer_bytes = 0;

  // Tensor parallelism: the tensor group's blocking all-reduces inside
  // fwd_ms, bwd_ms (its B) and recompute_ms (a recomputed layer's forward
  // runs its all-reduces again), and the bytes each rank all-reduces.
  double tensor_fwd_ms = 0, tensor_bwd_ms = 0, tensor_recompute_ms = 0;
  std::uint64_t tensor_fwd_bytes = 0, tensor_bwd_bytes = 0, tensor_recompute_bytes = 0;

  double compute_ms() const { return fwd_ms + bwd_ms + recompute_ms; }
};

StageCost stage_cost(const ModelProfile& profile, const StageRange& range, const std::vector<MemoryPolicy>& policy);

// What a stage holding layers [first, last] keeps resident for transfers:
// per cut, one posted receive and one unacknowledged send, of the cut's size.
std::uint64_t transfer_buffer_bytes(const ModelProfile& profile, int first_layer, int last_layer);

// Time of a transfer of `bytes` over a link of `gbps` Gbit/s.
double transfer_ms(std::uint64_t bytes, double gbps, double latency_us);

// Time the sending stage itself spends on one send of `bytes` (host-driven
// transports; zero where the device has none, see DeviceSpec).
double send_cpu_ms(const DeviceSpec& device, std::uint64_t bytes);

// Upper bound on a stage's resident bytes: the stage's static memory, extra
// stashed weight versions, `in_flight` microbatches of kept activations, and
// the transient buffers of the host link, each at most X = the larger of a
// microbatch's offloaded activations and its offloaded W stash: while a
// forward runs, its own offload, the one before (still going out) and the
// next action's reload (coming in); while a backward or W runs, its own
// reload and one more (the next reload, or an offload still going out),
// beside a backward also the largest rematerialised activation and its
// workspace. The simulator's measured peak never exceeds it as long as each
// transfer takes no longer than a forward (the host link keeps up).
// W's stash held on the device is not in it: held_memory_bound adds it.
std::uint64_t peak_memory_bound(const StageCost& c, int in_flight, int weight_versions);

}  // namespace pw
