#pragma once
// Activation offload in one iteration of a run (issue 43): per stage, which
// layers went to the host and back for which microbatches, how long the host
// link carried them, and how much of that the stage's compute hid; under a
// split backward also W's stash of those layers, out after B and back
// before W (a swap at or after the microbatch's B on the stage). Computed
// from events alone (swap_out / swap_in, and the idle-time attribution's
// swap_stall), so a simulated and a recorded run read alike; `pipewright
// explain` prints it and the studio's Explain dock shows it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/idle_attribution.h"
#include "core/events/event.h"

namespace pw {

struct MicrobatchOffload {
  std::int32_t microbatch = -1, chunk = 0;
  std::int64_t out_start_ns = -1, out_end_ns = -1;  // its offload, first to last transfer
  std::int64_t in_start_ns = -1, in_end_ns = -1;    // its reload (-1: none in the window)
  // W's stash, out after B and back before W (-1: none: no split backward,
  // or W right after its B kept it).
  std::int64_t stash_out_start_ns = -1, stash_out_end_ns = -1;
  std::int64_t stash_in_start_ns = -1, stash_in_end_ns = -1;
};

struct StageOffload {
  std::int32_t stage = 0;
  std::vector<std::int32_t> layers;  // offloaded at least once, ascending
  std::int64_t bytes_out = 0, bytes_in = 0;      // activations and W's stash
  std::int64_t stash_bytes_out = 0;              // of bytes_out: W's stash
  std::int64_t link_ns = 0;     // the host link's busy time, both directions (overlaps merged per direction)
  std::int64_t exposed_ns = 0;  // the stage's swap_stall: waiting for (or doing) a transfer
  std::int64_t hidden_ns() const { return link_ns > exposed_ns ? link_ns - exposed_ns : 0; }
  std::vector<MicrobatchOffload> microbatches;  // by first offload
};

struct OffloadSummary {
  std::vector<StageOffload> stages;  // the stages that offloaded, by stage
  std::int64_t link_ns = 0, exposed_ns = 0, bytes_out = 0, stash_bytes_out = 0;
  std::int64_t hidden_ns() const { return link_ns > exposed_ns ? link_ns - exposed_ns : 0; }
};

// The explained iteration's offload: each stage's swaps that start inside
// its attributed window (`att`'s rows of `iteration`). None when no stage
// swapped in that window.
std::optional<OffloadSummary> offload_summary(const std::vector<Event>& events, const Attribution& att, int iteration);

// The summary in words, one line for the whole and one per stage ("stage 0:
// layers 2,4,6 of 8 microbatches, 7.88 GiB out; link 1056.96 ms, hidden
// 1056.96 ms, exposed 0.00 ms"): what `pipewright explain` prints and the
// studio's Explain dock shows, written once.
std::vector<std::string> offload_lines(const OffloadSummary& o);

}  // namespace pw
