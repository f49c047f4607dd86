// Activations and gradients between virtual stages: Gloo p2p with tags that
// pair each send with its receive, receives posted ahead of their use, and
// a device's hand-off between two of its own chunks without a transfer.
#include "runtime/stage/stage_impl.h"

#include "core/events/clock.h"
#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw::rt {

using namespace stage_impl;

int StageExecutor::Impl::tag(Dir dir, int mb, int vstage) const {
  // Unique within a window of microbatches; gloo matches equal tags in order.
  return static_cast<int>(((global_mb(mb) % 65536) * vstages + vstage) * 2 + dir);
}

// Receives: activation into virtual stage v, or the gradient of v's output.
void StageExecutor::Impl::post_recv(Dir dir, int mb, int chunk) {
  auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
  if (recvs.count(key)) return;
  int v = sched->virtual_stage(device, chunk);
  int peer = peer_of(dir == kActivation ? v - 1 : v + 1);
  if (peer == device) return;  // a local hand-off
  const auto& r = plan.stages[v];
  Comm c;
  c.buf.push_back(recv_buffer(dir == kActivation ? shapes[r.first_layer] : shapes[r.last_layer + 1], placement));
  c.work = pg->recv(c.buf, peer, tag(dir, mb, v));
  recvs.emplace(key, std::move(c));
}
at::Tensor StageExecutor::Impl::take_recv(Dir dir, int mb, int chunk) {
  auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
  if (auto l = local.find(key); l != local.end()) {
    at::Tensor t = l->second;
    local.erase(l);
    return t;
  }
  int v = sched->virtual_stage(device, chunk);
  if (peer_of(dir == kActivation ? v - 1 : v + 1) == device)
    throw std::logic_error("the schedule runs microbatch " + std::to_string(mb) + " on virtual stage " +
                           std::to_string(v) + " before this device produced its " +
                           (dir == kActivation ? "input" : "output gradient"));
  post_recv(dir, mb, chunk);
  auto it = recvs.find(std::make_tuple(static_cast<int>(dir), mb, chunk));
  std::int64_t t0 = steady_now_ns();
  it->second.work->wait();
  at::Tensor t = from_wire(it->second.buf[0], placement);
  recvs.erase(it);
  emit(EventKind::Recv, t0, mb, chunk, t.nbytes());
  return t;
}
void StageExecutor::Impl::send(Dir dir, int mb, int chunk, const at::Tensor& t) {
  int v = sched->virtual_stage(device, chunk);
  int to = dir == kActivation ? v + 1 : v - 1;
  if (peer_of(to) == device) {
    local[std::make_tuple(static_cast<int>(dir), mb, chunk_of(to))] = t;
    return;
  }
  std::int64_t t0 = steady_now_ns();
  Comm c;
  c.buf.push_back(to_wire(t, placement));
  // The receiver's tag names the virtual stage that receives (activation)
  // or whose output the gradient belongs to.
  c.work = pg->send(c.buf, peer_of(to), tag(dir, mb, dir == kActivation ? to : to));
  sends.push(std::move(c.buf), std::move(c.work));
  emit(EventKind::Send, t0, mb, chunk, t.nbytes());
}
void StageExecutor::Impl::wait_sends() {
  sends.drain();
}

// Posts the receives the next actions will need, so a peer's send never waits on us.
void StageExecutor::Impl::prefetch(std::int64_t from, std::int64_t limit_mb) {
  std::int64_t n = sched->length(device);
  for (std::int64_t i = from; i < std::min(n, from + 2); ++i) {
    Action a = sched->action(device, i);
    if (limit_mb >= 0 && a.microbatch >= limit_mb) continue;
    int v = sched->virtual_stage(device, a.chunk);
    if (a.kind == ActionKind::Forward && v > 0) post_recv(kActivation, a.microbatch, a.chunk);
    bool needs_gradient = a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
    if (needs_gradient && v < vstages - 1) post_recv(kGradient, a.microbatch, a.chunk);
  }
}

}  // namespace pw::rt
