#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
  // Host-driven transports (Gloo over TCP) copy a message into the socket on
  // the sender's own thread, so a send also occupies the sending stage:
  // send_cpu_us per message plus bytes at send_cpu_gbps (0: no per-byte
  // part). Zero for GPUs, where NCCL and copy engines run beside compute.
  double send_cpu_us = 0;
  double send_cpu_gbps = 0;
  // Host time a stage spends after each forward, backward and optimizer step
  // outside them (its bookkeeping: memory checks, event records, posting the
  // next receives). It delays the stage's next action but is no compute.
  // Zero in the analytic model; `pipewright profile --in-situ` measures it.
  // The value at the job's microbatch size: where the job gives a table by
  // size (action_overhead_by_microbatch), it is read from the table for the
  // size in use (action_overhead_at), since on a host transport it grows as
  // microbatches shrink: more messages a second, each contending for the
  // same cores.
  double action_overhead_us = 0;
  std::vector<std::pair<int, double>> action_overhead_by_microbatch;  // (size, us), by size
  // The per-microbatch terms of analytic costs (docs/planners.md, "Costs
  // per microbatch size"): a layer phase at microbatch b costs
  // alpha + beta * b with alpha = small_batch_penalty x beta + its dispatch
  // (layer_dispatch_us for a forward, twice that for a backward), so one
  // sample costs (1 + small_batch_penalty) x what it costs in a large
  // microbatch; each parameter tensor adds optimizer_tensor_us to the
  // optimizer step. Zero for a custom device unless set: its costs are what
  // the job states.
  double small_batch_penalty = 0;
  double layer_dispatch_us = 0;
  double optimizer_tensor_us = 0;
};

// The action overhead at microbatch size b from the table: linear between
// the sizes measured, the nearest one's beyond them; action_overhead_us
// when there is no table.
double action_overhead_at(const DeviceSpec& d, int b);

// Known presets; nullopt for an unknown name.
std::optional<DeviceSpec> device_preset(const std::string& name);
std::vector<std::string> device_preset_names();

}  // namespace pw
