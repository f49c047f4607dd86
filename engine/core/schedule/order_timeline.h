#pragma once
#include <algorithm>
#include <vector>

#include "core/schedule/action.h"

namespace pw {

// What one iteration costs when a job trains many back to back (issue 43,
// docs/schedules.md). The engine's stage loop starts iteration i+1 on a
// device right after that device's own optimizer step; nothing waits for
// the other devices unless the job reduces the whole gradient at the step
// (training.clip_grad_norm, training.skip_nonfinite). So by default
// iterations overlap and one costs its longest device window (first start
// to last end on one device): shifting the whole iteration by that much
// keeps every device's order and every dependency, so it bounds the
// steady-state period, and for 1F1B-like orders, whose device 0 is busy
// from the first moment to the last, it is the span. With a synchronising
// step an iteration costs its span (first start to last end anywhere).
enum class IterationCost { Window, Span };
const char* to_string(IterationCost c);

// One microbatch's compute on one virtual stage: forward, input gradient
// (B) and weight gradient (W). A full Backward takes b + w.
struct ActionTimes {
  double f = 1, b = 1, w = 1;
};

// What a per-device order is generated for and judged by: the times of
// each virtual stage, one transfer time between devices, and each device's
// memory limit counted in activation units (one microbatch held by one
// virtual stage = 1 unit). B frees `released_at_b` of a unit (what W does
// not need: W reads only each layer's input and output gradient), W the
// rest; a full Backward frees the whole unit. A plan's V device holds
// different bytes per microbatch on its two chunks: `held` gives each
// virtual stage's share of the device's unit (the larger chunk's bytes), so
// the count is bytes / unit and a cap sized in bytes means the same here as
// in the planners' range check.
struct OrderProblem {
  int devices = 1, microbatches = 1;
  bool v_shape = false;              // two chunks per device in a V: device d runs d and 2p-1-d
  std::vector<ActionTimes> stages;   // per virtual stage, in pipeline order (p, or 2p when v_shape)
  double transfer = 0;               // between two devices, either direction (none inside a device)
  std::vector<double> memory_limit;  // per device, activation units; empty = unlimited
  double released_at_b = 0;          // in [0, 1]
  // Per-stage refinements a plan supplies (generated from the plan's own
  // costs, core/plan/plan_order.h); empty = the scalars above everywhere.
  std::vector<double> hops;      // transfer between virtual stage j and j+1 (size V-1), if on two devices
  std::vector<double> released;  // released_at_b per virtual stage (size V), each <= held (negative: B adds)
  std::vector<double> held;      // units F adds per virtual stage (size V), each in [0, 1]; empty = 1
  IterationCost objective = IterationCost::Window;  // what the generator minimises

  double hop(int j) const { return hops.empty() ? transfer : hops[j]; }
  double release(int vs) const { return released.empty() ? released_at_b : released[vs]; }
  double hold(int vs) const { return held.empty() ? 1.0 : held[vs]; }
  // The most a microbatch of `vs` holds between its F and its W (more than
  // its F's share where B adds W's stash).
  double most_held(int vs) const { return std::max(hold(vs), hold(vs) - release(vs)); }
  // The least any order holds on a device: one microbatch per chunk (a V's
  // turn keeps one on each).
  double least_held(int device) const {
    double s = 0;
    for (int k = 0; k < chunks(); ++k) s += hold(vstage(device, k));
    return s;
  }
  // What action `a` of `device` changes the device's held units by: F adds
  // its stage's share, B frees what W does not need (a negative share adds
  // W's stash), W the rest, a full backward everything. The one count
  // time_orders, and the repair of orders over a limit, use.
  double memory_delta(int device, const Action& a) const;
  int chunks() const { return v_shape ? 2 : 1; }
  int virtual_stages() const { return devices * chunks(); }
  int device_of(int vs) const { return vs < devices ? vs : 2 * devices - 1 - vs; }
  int vstage(int device, int chunk) const { return chunk == 0 ? device : 2 * devices - 1 - device; }
  // Throws std::invalid_argument naming the field that is out of range.
  void validate() const;
};

struct OrderTiming {
  bool complete = false;             // false: some device waits forever (the order cannot run)
  double makespan = 0;               // end of the last action (the flushed iteration, the span)
  double window = 0;                 // the longest device window, last_end - first_start
  std::vector<double> first_start;   // per device
  std::vector<double> last_end;      // per device
  std::vector<double> peak_memory;   // per device, units, counted along the order
  double cost(IterationCost c) const { return c == IterationCost::Window ? window : makespan; }
};

// Runs `order` (per device; OptimizerStep takes no time) as early as its
// dependencies allow: F after the previous virtual stage's F of that
// microbatch has arrived, B after the next one's B (the last virtual
// stage: after its own F), W after its own B. Transfers are pure latency
// (every link is free), which is the model the generator optimises.
OrderTiming time_orders(const OrderProblem& pr, const std::vector<std::vector<Action>>& order);

// Whether every device's memory stays within its limit after every action.
bool within_memory(const OrderProblem& pr, const OrderTiming& t);

}  // namespace pw
