#include "core/schedule/v_building_block.h"

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>

namespace pw {
namespace {

// The passes of one microbatch on a device, in the block's terms. B1 comes
// before B0: the backward starts at the V's end (chunk 1 of device 0).
enum Pass : int { F0 = 0, F1 = 1, B1 = 2, B0 = 3, W = 4, W0 = 5 };
// W: any W while the order is being reordered (the k-th W follows the k-th
// B of either chunk); once split, chunk 1's, and W0 chunk 0's.

// A device's six unit passes per microbatch (F, B, W of two chunks): the
// block repeats this often, so the steady state keeps every device busy.
constexpr int kRepeat = 6;

// Where each pass sits on the unit grid for one device.
struct DeviceSlots {
  std::vector<std::vector<int>> slot;  // [pass][microbatch]
  std::vector<int> at;                 // slot -> pass there, -1 free

  int end() const {
    int e = 0;
    for (const auto& s : slot)
      if (!s.empty()) e = std::max(e, s.back() + 1);
    return e;
  }
  void index() {
    at.assign(end(), -1);
    for (int k = 0; k < static_cast<int>(slot.size()); ++k)
      for (int s : slot[k]) at[s] = k;
  }
  void move(int pass, int mb, int to) {
    at[slot[pass][mb]] = -1;
    slot[pass][mb] = to;
    at[to] = pass;
  }
};

// The block of device d of p: the slots of F0, F1, B1, B0 of microbatch 0.
// V-Min sends each pass on at once (one slot a hop) and starts the backward
// right after the forward's turn: a device holds chunk 0 from slot d to
// 4p - 1 - d and chunk 1 from 2p - 1 - d to 2p + d, about 4p slots in all,
// so about 2p/3 chunk units at one microbatch per 6 slots (plus W's lag).
// V-Half lets the passes that travel away from device 0 (chunk 0's F,
// chunk 1's B) wait a slot on each device, two slots a hop: about 6p
// slots, p units. The gap moves the backward by a slot count that keeps the
// four passes on distinct slots modulo 6 where the plain block's collide.
std::array<int, 4> block_of(VBlock b, int p, int d) {
  if (b == VBlock::Min) {
    const int gap = p % 3 == 0 ? 2 : 0;
    return {d, 2 * p - 1 - d, 2 * p + gap + d, 4 * p + gap - 1 - d};
  }
  const int gap = p % 2 == 0 ? 3 : 0;
  return {2 * d, 3 * p - 2 - d, 3 * p + gap + 2 * d - 1, 6 * p + gap - d - 2};
}

// Puts each pending W (one per B before it) on the next free slot, and
// those left after the last F/B at the end. `split`: W and W0 per chunk,
// chunk 1's first (the V's end drains first), each in microbatch order;
// else one list of W's in B order.
void place_w(DeviceSlots& dv, bool split) {
  dv.slot.resize(4);
  dv.index();
  std::array<int, 2> pending{0, 0};
  std::array<std::vector<int>, 2> w;
  const int bound = static_cast<int>(dv.at.size());
  for (int i = 0; i < bound; ++i) {
    const int k = dv.at[i];
    if (k == B1 || k == B0) {
      ++pending[split ? k - B1 : 0];
    } else if (k < 0) {
      for (int c = 0; c < 2; ++c)
        if (pending[c] > 0) {
          w[c].push_back(i);
          --pending[c];
          break;
        }
    }
  }
  int next = bound;
  for (int c = 0; c < 2; ++c)
    for (; pending[c] > 0; --pending[c]) w[c].push_back(next++);
  dv.slot.push_back(std::move(w[0]));
  if (split) dv.slot.push_back(std::move(w[1]));
  dv.index();
}

// The most chunk units the device holds at once (F adds one, W frees one;
// B frees nothing). Without W's placed, each pending W takes the next free
// slot, as place_w would put it. Stops once past `stop_above` (the answer
// is then only known to exceed it).
int peak_held(const DeviceSlots& dv, bool ws_placed, int stop_above = std::numeric_limits<int>::max()) {
  int held = 0, peak = 0, pending = 0;
  for (int k : dv.at) {
    if (k == F0 || k == F1) {
      ++held;
    } else if (k == B1 || k == B0) {
      ++pending;
    } else if (k >= W) {
      --held;
    } else if (!ws_placed && pending > 0) {
      --pending;
      --held;
    }
    peak = std::max(peak, held);
    if (peak > stop_above) break;
  }
  return peak;
}

// The paper's squeezing and reordering on the unit grid. Passes are taken
// in slot order; those of the warm-up (before device 0's first B0, where
// the block first completes) and of the cool-down (after the last
// microbatch's first F0) move to the earliest free slot after their
// dependencies where the device still holds no more than the worst device
// held before; the steady state stays the repeated block. `ws_placed`: the
// W's are passes that move too (the first round); else only the cool-down
// moves and W's take the free slots left (the second round).
void reorder(std::vector<DeviceSlots>& devs, int m, bool ws_placed) {
  const int p = static_cast<int>(devs.size());
  if (ws_placed)
    for (auto& dv : devs) place_w(dv, false);
  const int passes = ws_placed ? 5 : 4;
  int limit = 0;
  for (const auto& dv : devs) limit = std::max(limit, peak_held(dv, ws_placed));

  std::vector<std::tuple<int, int, int, int>> todo;  // slot, device, pass, microbatch
  for (int d = 0; d < p; ++d)
    for (int k = 0; k < passes; ++k)
      for (int mb = 0; mb < static_cast<int>(devs[d].slot[k].size()); ++mb)
        todo.emplace_back(devs[d].slot[k][mb], d, k, mb);
  std::sort(todo.begin(), todo.end());

  std::vector<std::vector<char>> taken(p);
  for (int d = 0; d < p; ++d) taken[d].assign(devs[d].at.size(), 0);
  enum { Warmup, Steady, Cooldown } phase = Warmup;
  for (const auto& [at, d, k, mb] : todo) {
    DeviceSlots& dv = devs[d];
    if (phase == Warmup && k == B0 && d == 0) phase = Steady;
    if (phase == Steady && k == F0 && mb == m - 1) {
      phase = Cooldown;
      taken[d][at] = 1;
      continue;
    }
    if (phase == Steady || (phase == Warmup && !ws_placed)) {
      taken[d][at] = 1;
      continue;
    }
    // The last slot a dependency occupies: the same pass of the
    // neighbouring virtual stage, the pass before on this device, the
    // previous microbatch's same pass; a W after its B.
    int dep = -1;
    if ((k == F0 || k == B1) && d > 0) dep = std::max(dep, devs[d - 1].slot[k][mb]);
    if ((k == F1 || k == B0) && d + 1 < p) dep = std::max(dep, devs[d + 1].slot[k][mb]);
    if (k == F1 || k == B1 || k == B0) dep = std::max(dep, dv.slot[k - 1][mb]);
    if (k == W) {
      std::vector<int> bs = dv.slot[B1];
      bs.insert(bs.end(), dv.slot[B0].begin(), dv.slot[B0].end());
      std::nth_element(bs.begin(), bs.begin() + mb, bs.end());
      dep = std::max(dep, bs[mb]);
    }
    if (mb > 0) dep = std::max(dep, dv.slot[k][mb - 1]);
    // With the W's placed, moving a B or a W earlier cannot raise what the
    // device holds (B holds nothing more; W frees sooner): no count needed.
    const bool may_raise = !ws_placed || k == F0 || k == F1;
    for (int s = dep + 1; s < at; ++s) {
      if (taken[d][s]) continue;
      dv.move(k, mb, s);
      if (!may_raise || peak_held(dv, ws_placed, limit) <= limit) break;
      dv.move(k, mb, at);
    }
    taken[d][dv.slot[k][mb]] = 1;
  }
}

// Runs each device's passes in slot order, each as early as its
// dependencies and the device's previous pass allow at unit times, and
// puts it there: the paper's squeezing (the order stays; idle slots that
// no dependency needs close).
void squeeze(std::vector<DeviceSlots>& devs) {
  const int p = static_cast<int>(devs.size());
  std::vector<std::tuple<int, int, int, int>> todo;  // slot, device, pass, microbatch
  for (int d = 0; d < p; ++d)
    for (int k = 0; k < static_cast<int>(devs[d].slot.size()); ++k)
      for (int mb = 0; mb < static_cast<int>(devs[d].slot[k].size()); ++mb)
        todo.emplace_back(devs[d].slot[k][mb], d, k, mb);
  std::sort(todo.begin(), todo.end());
  std::vector<int> free_at(p, 0);
  for (const auto& [at, d, k, mb] : todo) {
    int start = free_at[d];
    // A slot's end is slot + 1; the new slots of passes before this one are
    // already in place (they sort first).
    if ((k == F0 || k == B1) && d > 0) start = std::max(start, devs[d - 1].slot[k][mb] + 1);
    if ((k == F1 || k == B0) && d + 1 < p) start = std::max(start, devs[d + 1].slot[k][mb] + 1);
    if (k == F1 || k == B1 || k == B0) start = std::max(start, devs[d].slot[k - 1][mb] + 1);
    devs[d].slot[k][mb] = start;
    free_at[d] = start + 1;
  }
  for (auto& dv : devs) dv.index();
}

}  // namespace

std::vector<std::vector<Action>> v_block_order(VBlock block, int p, int m, bool reorder_passes) {
  if (p < 2 || m < 1) return {};
  std::vector<DeviceSlots> devs(p);
  for (int d = 0; d < p; ++d) {
    const auto first = block_of(block, p, d);
    devs[d].slot.assign(4, {});
    std::vector<char> seen(kRepeat, 0);
    for (int k = 0; k < 4; ++k) {
      // Repeating every 6 slots, two passes on one slot modulo 6 collide.
      if (seen[first[k] % kRepeat]++) return {};
      for (int mb = 0; mb < m; ++mb) devs[d].slot[k].push_back(first[k] + kRepeat * mb);
    }
    devs[d].index();
  }
  if (reorder_passes) {
    reorder(devs, m, true);
    squeeze(devs);
    for (auto& dv : devs) {
      dv.slot.resize(4);
      dv.index();
    }
    reorder(devs, m, false);
    for (auto& dv : devs) place_w(dv, false);
    squeeze(devs);
  }
  std::vector<std::vector<Action>> order(p);
  for (int d = 0; d < p; ++d) {
    place_w(devs[d], true);
    std::vector<std::pair<int, Action>> by_slot;
    for (int k = 0; k <= W0; ++k) {
      const ActionKind kind = k <= F1   ? ActionKind::Forward
                              : k <= B0 ? ActionKind::BackwardInput
                                        : ActionKind::BackwardWeight;
      const std::uint16_t chunk = (k == F1 || k == B1 || k == W) ? 1 : 0;
      for (int mb = 0; mb < m; ++mb) by_slot.push_back({devs[d].slot[k][mb], Action{kind, chunk, mb}});
    }
    std::sort(by_slot.begin(), by_slot.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [slot, a] : by_slot) order[d].push_back(a);
    order[d].push_back({ActionKind::OptimizerStep, 0, 0});
  }
  return order;
}

}  // namespace pw
