#pragma once
#include <cstdint>
#include <string>

namespace pw {

// pipeline.memory_cap (issue 43): a per-device cap on the activations a
// schedule keeps in flight, below what the device budget would allow, as in
// Qi et al., "Pipeline Parallelism with Controllable Memory" (NeurIPS'24):
// V-Min runs at about 1/3 of 1F1B's activations, V-Half at 1/2, V-ZB at 1.
//
// What it counts, per device: the bytes microbatches hold between their
// forward and their last backward action (kept activations, a recomputed
// layer's input, W's stash after B), at the worst moment of the order; not
// weights, optimizer state, transfer buffers or the backward's workspace,
// and not what is swapped to the host (on the device only from its swap-in).
//
// `fraction` f: f x what 1F1B keeps on its busiest device with every layer
// kept whole, min(m, p) microbatches of this device's layers' activation
// bytes (both chunks of a V), so that recompute and offload can bring a
// device under it (the planners' range check counts alike,
// PipelineModel::activation_cap). `bytes`: that many bytes per device. At
// most one is set; neither = no cap (the budget alone).
struct MemoryCap {
  double fraction = 0;
  std::uint64_t bytes = 0;
  bool set() const { return fraction > 0 || bytes > 0; }
  bool operator==(const MemoryCap&) const = default;
};

// Reads the field's text form: a fraction "1/3", "0.5" (in (0, 2]) or bytes
// "12GiB", "800 MB", "1500000000 B" (units B, KB, MB, GB, KiB, MiB, GiB,
// TiB). Throws std::invalid_argument saying why (the caller names the field).
MemoryCap parse_memory_cap(const std::string& text);
// The same from a JSON number (a fraction in (0, 2]).
MemoryCap memory_cap_fraction(double fraction);
// "1/3 of 1f1b's activations" / "8.00 GiB" / "none".
std::string to_string(const MemoryCap& cap);

// The cap in the generator's units for one device (OrderProblem: one unit =
// one microbatch held by one virtual stage, `unit_bytes` of it). For a
// fraction: f x min(m, p) x device_mb_bytes (the device's layers'
// activation bytes per microbatch kept whole, over its chunks) / unit_bytes;
// `device_mb_bytes` <= 0 takes the form of chunks kept whole and equal,
// f x min(m, p) x chunks. For bytes: bytes / unit_bytes. Infinity when the
// cap is not set or a microbatch holds nothing (unit_bytes 0).
double memory_cap_units(const MemoryCap& cap, int devices, int microbatches, int chunks, double unit_bytes = 0,
                        double device_mb_bytes = 0);

}  // namespace pw
