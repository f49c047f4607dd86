#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/schedule/greedy_order.h"
#include "core/schedule/order_timeline.h"
#include "core/schedule/schedule.h"

namespace pw {

struct GeneratedOrder {
  std::vector<std::vector<Action>> order;  // per device, ending with the optimizer step
  OrderTiming timing;                      // under the problem's times (time_orders)
  std::string source;                      // which candidate won: "greedy ..." or a hand-built family
};

// The fastest order found for `pr` whose memory stays within each device's
// limit after every action (issue 28). Candidates: the Zero Bubble
// authors' automatic heuristic (ZB-1p / ZB-2p: a greedy list schedule in
// time order where a device runs a B whose gradient has arrived, else an F
// its memory allows, else a pending W) under several variants (F or B
// first, idling for a B about to arrive, capping warm-up at 1F1B's or
// ZB-H2's count, which chunk first in a V), plus the hand-built orders of
// the same placement (1F1B, ZB-H1, ZB-H2; ZB-V, DualPipeV, V-Half, V-Min)
// wherever they fit the limits, and those above the limits brought under
// them (fit_memory, order_repair.h: "zb-v fitted"). Each is timed with time_orders and the shortest kept, so
// the result is never slower than a hand-built order that fits. Throws
// std::invalid_argument for a problem validate() refuses and
// std::runtime_error if no candidate fits. A local search then moves single
// actions while that shortens the order, for at most `search_budget`
// actions timed in all (time_orders calls x actions per call).
GeneratedOrder generate_order(const OrderProblem& pr, std::int64_t search_budget = 10'000'000);

// The same, judging `extra` candidates beside the heuristic's and the
// hand-built ones (those that do not fit the limits are dropped): a plan
// passes the order it would run otherwise, so the result is never slower
// than that one either.
GeneratedOrder generate_order(const OrderProblem& pr, std::int64_t search_budget, const std::vector<NamedOrder>& extra);

// The hand-built orders of pr's placement, by name (one chunk: 1f1b, zb-h1,
// zb-h2; a V: zb-v, dualpipe-v, v-half, v-min), each where its family
// accepts the shape; not timed or filtered by memory.
std::vector<NamedOrder> hand_built_orders(const OrderProblem& pr);

// A schedule's per-device orders, as stored.
std::vector<std::vector<Action>> order_of(const Schedule& s);

// One device's order as text ("F0 F1 B0 W0 ... S"; chunk 1 of a V as
// "F0:1"), as plans store it, and back (std::invalid_argument naming the
// token it cannot read).
std::string order_to_text(const std::vector<Action>& order);
std::vector<Action> order_from_text(const std::string& text);

// "" if `order` runs on `pr`'s placement: per device, every F, B (or a
// full backward) and W of each of its chunks and microbatches exactly
// once, each kind in microbatch order, one optimizer step at the end, and
// no device waiting forever; else what is wrong.
std::string check_order(const OrderProblem& pr, const std::vector<std::vector<Action>>& order);

// `pr` with unit times (F = B = W = 1), no transfer and B releasing
// nothing, at the memory of 1F1B's busiest device (min(m, p) units on
// every device) or, for a V, of ZB-V's: what `pipeline.schedule:
// generated` runs when the planner does not supply the plan's own times.
OrderProblem default_order_problem(int devices, int microbatches, int chunks);

// A Schedule (kind Generated) running `g`'s order on `pr`'s placement.
std::unique_ptr<Schedule> make_generated_schedule(const OrderProblem& pr, const GeneratedOrder& g);

// generate_order(default_order_problem(...)) as a Schedule; chunks 1 or 2
// (a V), else std::invalid_argument.
std::unique_ptr<Schedule> make_generated(int devices, int microbatches, int chunks);

}  // namespace pw
