#include "core/schedule/zero_bubble.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace pw {

ListSchedule::ListSchedule(int devices, int microbatches, int chunks, std::vector<std::vector<Action>> order)
    : Schedule(devices, microbatches, chunks),
      order_(std::move(order)),
      in_flight_(devices, 0),
      chunk_in_flight_(devices, std::vector<int>(chunks, 0)) {
  for (int d = 0; d < devices; ++d) {
    int held = 0;
    std::vector<int> chunk_held(chunks, 0);
    for (const Action& a : order_[d]) {
      if (a.kind == ActionKind::Forward) {
        in_flight_[d] = std::max(in_flight_[d], ++held);
        chunk_in_flight_[d][a.chunk] = std::max(chunk_in_flight_[d][a.chunk], ++chunk_held[a.chunk]);
      }
      if (a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardWeight) {
        --held;
        --chunk_held[a.chunk];
      }
    }
  }
}

namespace {

Action act(ActionKind k, int mb, int chunk = 0) { return {k, static_cast<std::uint16_t>(chunk), mb}; }
constexpr ActionKind F = ActionKind::Forward, B = ActionKind::BackwardInput, W = ActionKind::BackwardWeight,
                     FullB = ActionKind::Backward;
Action step() { return {ActionKind::OptimizerStep, 0, -1}; }

class ZbH1Schedule final : public ListSchedule {
 public:
  using ListSchedule::ListSchedule;
  ScheduleKind kind() const override { return ScheduleKind::ZBH1; }
  bool splits_backward() const override { return true; }
};

class ZbH2Schedule final : public ListSchedule {
 public:
  using ListSchedule::ListSchedule;
  ScheduleKind kind() const override { return ScheduleKind::ZBH2; }
  bool splits_backward() const override { return true; }
};

class ZbVSchedule final : public VShapeSchedule {
 public:
  using VShapeSchedule::VShapeSchedule;
  ScheduleKind kind() const override { return ScheduleKind::ZBV; }
};

class DualPipeVSchedule final : public VShapeSchedule {
 public:
  using VShapeSchedule::VShapeSchedule;
  ScheduleKind kind() const override { return ScheduleKind::DualPipeV; }
};

// ZB-H1 (Qi et al. 2024, section 3.1): 1F1B's order of F and B (the input
// gradient alone, so it reaches the previous stage sooner), with device d's
// W of microbatch k placed after its B of microbatch k+d. Device d idles d
// forwards at the start; the W's it deferred fill the drain instead of the
// B's of earlier devices, which each finish a W sooner: bubble (p-1)(F+B-W).
// A device holds at most p microbatches (1F1B's worst device).
std::vector<std::vector<Action>> zb_h1_order(int p, int m) {
  std::vector<std::vector<Action>> order(p);
  for (int d = 0; d < p; ++d) {
    auto& o = order[d];
    int warmup = std::min(p - 1 - d, m), lag = d, next_w = 0;
    for (int k = 0; k < warmup; ++k) o.push_back(act(F, k));
    for (int k = 0; k < m; ++k) {
      if (warmup + k < m) o.push_back(act(F, warmup + k));
      o.push_back(act(B, k));
      if (k - lag >= 0) o.push_back(act(W, next_w++));
    }
    while (next_w < m) o.push_back(act(W, next_w++));
    o.push_back(step());
  }
  return order;
}

// ZB-H2 (Qi et al. 2024, section 3.1): 2(p-d)-1 warm-up forwards on device
// d, so its first B arrives just as they end, then B, W, F per microbatch
// with device d's W of microbatch k after its B of k+2d. Device d's window
// (first start to last end) is then exactly m(F+B+W) for m >= 2p-1 at
// F = B = W: every device starts d forwards late and ends d forwards late,
// the later devices' deferred W's filling the drain. Every device holds up
// to 2p-1 microbatches. (The lag 2d was found by searching lags a*d+b for
// the smallest window at unit times; it is the only linear one at 2p-1.)
std::vector<std::vector<Action>> zb_h2_order(int p, int m) {
  std::vector<std::vector<Action>> order(p);
  for (int d = 0; d < p; ++d) {
    auto& o = order[d];
    int warmup = std::min(2 * (p - d) - 1, m), lag = 2 * d, next_f = 0, next_w = 0;
    while (next_f < warmup) o.push_back(act(F, next_f++));
    for (int k = 0; k < m; ++k) {
      o.push_back(act(B, k));
      if (k - lag >= 0) o.push_back(act(W, next_w++));
      if (next_f < m) o.push_back(act(F, next_f++));
    }
    while (next_w < m) o.push_back(act(W, next_w++));
    o.push_back(step());
  }
  return order;
}

// ZB-V (Qi et al. 2024, arXiv v2, section 6; the order of torch's
// ScheduleZBVZeroBubble): warm-up forwards of chunk 0 then alternating
// chunks, the turn's B and W straight after its F, a steady state of
// F B W per chunk, and a drain that defers chunk 1's W's. The order is laid
// out for max(m, 2p-1) microbatches and the ones past m dropped.
std::vector<std::vector<Action>> zb_v_order(int p, int m) {
  int count = std::max(m, 2 * p - 1);
  std::vector<std::vector<Action>> order(p);
  for (int d = 0; d < p; ++d) {
    std::vector<Action> o;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    for (int i = 0; i < 2 * (p - d) - 1; ++i) o.push_back(act(F, f0++, 0));
    for (int i = 0; i < d; ++i) {
      o.push_back(act(F, f1++, 1));
      o.push_back(act(F, f0++, 0));
    }
    for (int i = 0; i < p - d; ++i) {
      o.push_back(act(F, f1++, 1));
      o.push_back(act(B, b1, 1));
      o.push_back(act(W, b1++, 1));
    }
    while (f1 < f0 || f0 < count) {
      if (f0 < count) o.push_back(act(F, f0++, 0));
      o.push_back(act(B, b0, 0));
      o.push_back(act(W, b0++, 0));
      o.push_back(act(F, f1++, 1));
      o.push_back(act(B, b1, 1));
      o.push_back(act(W, b1++, 1));
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < d; ++i) {
      o.push_back(act(B, b0++, 0));
      o.push_back(act(B, b1++, 1));
    }
    for (int i = 0; i < p - d; ++i) {
      o.push_back(act(B, b0++, 0));
      o.push_back(act(W, w0++, 0));
    }
    while (w1 < b1) o.push_back(act(W, w1++, 1));
    while (w0 < b0) o.push_back(act(W, w0++, 0));
    if (f0 != count || f1 != count || b0 != count || b1 != count || w0 != count || w1 != count)
      throw std::logic_error("zb-v order: unbalanced actions on device " + std::to_string(d));
    for (const Action& a : o)
      if (a.microbatch < m) order[d].push_back(a);
    order[d].push_back(step());
  }
  return order;
}

// DualPipeV (DeepSeek's DualPipe repository, dualpipev.py; also torch's
// ScheduleDualPipeV): DualPipe cut in half and folded into a V. Eight phases
// per device; the steady state pairs a forward of one chunk with a full
// backward of the other (DualPipe overlaps the pair's compute with its
// communication; here the pair runs back to back), and the drain switches
// to split backwards whose W's fill the last bubbles.
std::vector<std::vector<Action>> dualpipe_v_order(int p, int m) {
  std::vector<std::vector<Action>> order(p);
  for (int d = 0; d < p; ++d) {
    auto& o = order[d];
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> pending_w;  // (chunk, microbatch)
    auto forward = [&](int c) { o.push_back(act(F, next_f[c]++, c)); };
    auto full_backward = [&](int c) { o.push_back(act(FullB, next_b[c]++, c)); };
    auto input_grad = [&](int c) {
      pending_w.emplace_back(c, next_b[c]);
      o.push_back(act(B, next_b[c]++, c));
    };
    auto weight_grad_if_pending = [&] {
      if (pending_w.empty()) return;
      o.push_back(act(W, pending_w.front().second, pending_w.front().first));
      pending_w.pop_front();
    };
    for (int i = 0; i < 2 * (p - d - 1); ++i) forward(0);
    for (int i = 0; i <= d; ++i) forward(0), forward(1);
    for (int i = 0; i < p - d - 1; ++i) {
      input_grad(1);
      weight_grad_if_pending();
      forward(1);
    }
    for (int i = 0; i < m - 2 * p + d + 1; ++i) {
      // DualPipe runs the pairs overlapped except the first on the last
      // device; executed back to back, both are F then full backward.
      forward(0);
      full_backward(1);
      forward(1);
      full_backward(0);
    }
    for (int i = 0; i < p - d - 1; ++i) {
      full_backward(1);
      forward(1);
      full_backward(0);
    }
    bool split = false;
    for (int i = 0; i <= d; ++i) {
      if (i == (d + 1) / 2 && d % 2 == 1) split = true;
      split ? input_grad(1) : full_backward(1);
      if (i == (d + 1) / 2 && d % 2 == 0) split = true;
      split ? input_grad(0) : full_backward(0);
    }
    for (int i = 0; i < p - d - 1; ++i) {
      weight_grad_if_pending();
      split ? input_grad(0) : full_backward(0);
    }
    while (!pending_w.empty()) weight_grad_if_pending();
    if (next_f[0] != m || next_f[1] != m || next_b[0] != m || next_b[1] != m)
      throw std::logic_error("dualpipe-v order: unbalanced actions on device " + std::to_string(d));
    o.push_back(step());
  }
  return order;
}

}  // namespace

std::unique_ptr<Schedule> make_zb_h1(int p, int m) { return std::make_unique<ZbH1Schedule>(p, m, 1, zb_h1_order(p, m)); }
std::unique_ptr<Schedule> make_zb_h2(int p, int m) { return std::make_unique<ZbH2Schedule>(p, m, 1, zb_h2_order(p, m)); }
std::unique_ptr<Schedule> make_zb_v(int p, int m) { return std::make_unique<ZbVSchedule>(p, m, 2, zb_v_order(p, m)); }

std::unique_ptr<Schedule> make_dualpipe_v(int p, int m) {
  if (m < 2 * p)
    throw std::invalid_argument("dualpipe-v needs microbatches (" + std::to_string(m) + ") >= 2 x devices (" +
                                std::to_string(2 * p) + ")");
  return std::make_unique<DualPipeVSchedule>(p, m, 2, dualpipe_v_order(p, m));
}

}  // namespace pw
