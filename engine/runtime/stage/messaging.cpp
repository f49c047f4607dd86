// Activations and gradients between virtual stages, through the Messenger:
// tagged (a tag pairs each send with its receive, receives posted two
// actions ahead of their use) or ordered (every operation posted at the
// point of the schedule's comm order, core/schedule/comm_order.h, so that
// per-pair FIFO matching pairs them, as under NCCL); and a device's
// hand-off between two of its own chunks without a transfer.
#include "runtime/stage/stage_impl.h"

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
  c.work = messenger.recv(c.buf, peer, tag(dir, mb, v));
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
  if (!messenger.ordered()) post_recv(dir, mb, chunk);
  auto it = recvs.find(std::make_tuple(static_cast<int>(dir), mb, chunk));
  if (it == recvs.end())
    throw std::logic_error("ordered messaging: microbatch " + std::to_string(mb) + " on virtual stage " +
                           std::to_string(v) + " needs a receive the comm order has not posted");
  std::int64_t t0 = clock->mark();
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
  if (messenger.ordered()) {  // posted by post_ordered, at its place in the order
    ordered.outbox[std::make_tuple(static_cast<int>(dir), mb, to)] = to_wire(t, placement);
    return;
  }
  std::int64_t t0 = clock->mark();
  Comm c;
  c.buf.push_back(to_wire(t, placement));
  // The receiver's tag names the virtual stage that receives (activation)
  // or whose output the gradient belongs to.
  c.work = messenger.send(c.buf, peer_of(to), tag(dir, mb, to));
  sends.push(std::move(c.buf), std::move(c.work));
  emit(EventKind::Send, t0, mb, chunk, t.nbytes());
}
void StageExecutor::Impl::wait_sends() {
  sends.drain();
}

// Posts the receives the next actions will need, so a peer's send never waits on us.
void StageExecutor::Impl::prefetch(std::int64_t from, std::int64_t limit_mb) {
  if (messenger.ordered()) return post_ordered(from, limit_mb);
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

// Ordered mode: posts, as one group each, the steps of this device's comm
// order due before action `before` of the program (its length: the steps
// after the last action). A program starts over when `before` goes back
// (the next iteration of a flush schedule) or the program changes.
void StageExecutor::Impl::post_ordered(std::int64_t before, std::int64_t limit_mb) {
  auto& o = ordered;
  if (o.program != sched || o.microbatches != sched->microbatches() || o.limit != limit_mb) {
    if (o.next != o.steps.size())
      throw std::logic_error("ordered messaging: a new program while the last one has steps unposted");
    o.steps = comm_order(*sched, limit_mb).devices[device];
    o.program = sched;
    o.microbatches = sched->microbatches();
    o.limit = limit_mb;
    o.next = 0;
  } else if (before < o.last_before) {
    if (o.next != o.steps.size())
      throw std::logic_error("ordered messaging: the program restarted with " +
                             std::to_string(o.steps.size() - o.next) + " steps unposted");
    o.next = 0;
  }
  o.last_before = before;
  for (; o.next < o.steps.size() && o.steps[o.next].before_action <= before; ++o.next) {
    messenger.begin_group();
    for (const CommOp& op : o.steps[o.next].ops) {
      Dir dir = op.msg.dir == MessageDir::Activation ? kActivation : kGradient;
      int mb = op.msg.microbatch;
      if (!op.send) {
        post_recv(dir, mb, chunk_of(op.msg.vstage));
        continue;
      }
      auto it = o.outbox.find(std::make_tuple(static_cast<int>(dir), mb, op.msg.vstage));
      if (it == o.outbox.end())
        throw std::logic_error("ordered messaging: the order sends " + to_string(op.msg) + " before it was made");
      int from = dir == kActivation ? op.msg.vstage - 1 : op.msg.vstage + 1;
      std::int64_t t0 = clock->mark();
      std::vector<at::Tensor> buf{std::move(it->second)};
      o.outbox.erase(it);
      auto work = messenger.send(buf, op.peer, 0);
      std::int64_t bytes = buf[0].nbytes();
      sends.push(std::move(buf), std::move(work));
      emit(EventKind::Send, t0, mb, chunk_of(from), bytes);
    }
    messenger.end_group();
  }
}

}  // namespace pw::rt
