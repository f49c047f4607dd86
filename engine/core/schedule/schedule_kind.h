#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pw {

enum class ScheduleKind {
  GPipe,          // fill-drain: all forwards, then all backwards, flush
  OneFOneB,       // 1F1B with a flush at the end of each iteration
  PipeDream,      // async 1F1B without flush, weight stashing ("pipedream")
  Interleaved,    // Megatron interleaved 1F1B, `chunks` model chunks per device
  CSP,            // NASPipe causal synchronous parallel (supernets)
  // Zero-bubble family: the backward split into B (input gradient) and W
  // (weight gradients), W filling bubbles (Qi et al., ICLR 2024).
  ZBH1,       // 1F1B's memory, bubble (p-1)(F+B-W)
  ZBH2,       // 2p-1 microbatches in flight, W fills the warm-up/drain bubbles
  ZBV,        // V-shaped: two chunks per device, device d holds d and 2p-1-d
  DualPipeV,  // DeepSeek's DualPipe cut in half: V-shaped, paired F and B
  // Controllable memory (Qi et al., NeurIPS'24): V orders at about 1/2 and
  // 1/3 of 1F1B's activations (controllable_memory.h).
  VHalf,
  VMin,
  // Generated per (p, m) and memory limit by the Zero Bubble authors'
  // heuristic, or a hand-built order where that is faster
  // (generated_order.h); one chunk per device, or two in a V.
  Generated,
};

// Schedules placing two chunks per device in a V (device d runs virtual
// stages d and 2p-1-d); their chunk count is always 2.
bool is_v_shape(ScheduleKind k);
// Schedules that flush: every stage steps once per iteration, after the
// batch's last backward (all but PipeDream's, which steps per microbatch).
bool flushes(ScheduleKind k);
// Schedules whose actions split the backward into B and W.
bool splits_backward(ScheduleKind k);

std::string to_string(ScheduleKind k);
std::optional<ScheduleKind> schedule_kind_from_string(const std::string& s);
std::vector<std::string> schedule_kind_names();

}  // namespace pw
