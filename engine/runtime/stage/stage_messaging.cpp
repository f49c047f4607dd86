// A stage's transfers between virtual stages (stage_messaging.h).
#include "runtime/stage/stage_messaging.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pw::rt::stage_impl {

StageMessaging::StageMessaging(Messenger::PG pg, MessagingMode mode, StageDevice placement,
                               StageTelemetry& telemetry)
    : messenger_(std::move(pg), mode), placement_(std::move(placement)), telemetry_(telemetry) {}

int StageMessaging::tag(const ActiveSchedule& run, Dir dir, int mb, int vstage) const {
  // Unique within a window of microbatches; gloo matches equal tags in order.
  return static_cast<int>(((run.global_mb(mb) % 65536) * run.vstages() + vstage) * 2 + dir);
}

// Receives: activation into virtual stage v, or the gradient of v's output.
void StageMessaging::post_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk) {
  auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
  if (recvs_.count(key)) return;
  int v = run.virtual_stage(chunk);
  int peer = run.device_of(dir == kActivation ? v - 1 : v + 1);
  if (peer == run.device) return;  // a local hand-off
  const auto& r = run.plan.stages[v];
  Comm c;
  c.buf.push_back(
      recv_buffer(dir == kActivation ? run.shapes[r.first_layer] : run.shapes[r.last_layer + 1], placement_));
  c.work = messenger_.recv(c.buf, peer, tag(run, dir, mb, v));
  recvs_.emplace(key, std::move(c));
}

at::Tensor StageMessaging::take_recv(const ActiveSchedule& run, Dir dir, int mb, int chunk) {
  auto key = std::make_tuple(static_cast<int>(dir), mb, chunk);
  if (auto l = local_.find(key); l != local_.end()) {
    at::Tensor t = l->second;
    local_.erase(l);
    return t;
  }
  int v = run.virtual_stage(chunk);
  if (run.device_of(dir == kActivation ? v - 1 : v + 1) == run.device)
    throw std::logic_error("the schedule runs microbatch " + std::to_string(mb) + " on virtual stage " +
                           std::to_string(v) + " before this device produced its " +
                           (dir == kActivation ? "input" : "output gradient"));
  if (!messenger_.ordered()) post_recv(run, dir, mb, chunk);
  auto it = recvs_.find(std::make_tuple(static_cast<int>(dir), mb, chunk));
  if (it == recvs_.end())
    throw std::logic_error("ordered messaging: microbatch " + std::to_string(mb) + " on virtual stage " +
                           std::to_string(v) + " needs a receive the comm order has not posted");
  EventClock::Mark t0 = telemetry_.mark();
  it->second.work->wait();
  at::Tensor t = from_wire(it->second.buf[0], placement_);
  recvs_.erase(it);
  telemetry_.emit(run.event(EventKind::Recv, mb, chunk, t.nbytes()), t0);
  return t;
}

void StageMessaging::send(const ActiveSchedule& run, Dir dir, int mb, int chunk, const at::Tensor& t) {
  int v = run.virtual_stage(chunk);
  int to = dir == kActivation ? v + 1 : v - 1;
  if (run.device_of(to) == run.device) {
    local_[std::make_tuple(static_cast<int>(dir), mb, run.chunk_of(to))] = t;
    return;
  }
  if (messenger_.ordered()) {  // posted by post_ordered, at its place in the order
    ordered_.outbox[std::make_tuple(static_cast<int>(dir), mb, to)] = to_wire(t, placement_);
    return;
  }
  EventClock::Mark t0 = telemetry_.mark();
  Comm c;
  c.buf.push_back(to_wire(t, placement_));
  // The receiver's tag names the virtual stage that receives (activation)
  // or whose output the gradient belongs to.
  c.work = messenger_.send(c.buf, run.device_of(to), tag(run, dir, mb, to));
  sends_.push(std::move(c.buf), std::move(c.work));
  telemetry_.emit(run.event(EventKind::Send, mb, chunk, t.nbytes()), t0);
}

void StageMessaging::wait_sends() { sends_.drain(); }

void StageMessaging::prefetch(const ActiveSchedule& run, std::int64_t from, std::int64_t limit_mb) {
  if (messenger_.ordered()) return post_ordered(run, from, limit_mb);
  const Schedule& s = run.schedule;
  std::int64_t n = s.length(run.device);
  for (std::int64_t i = from; i < std::min(n, from + 2); ++i) {
    Action a = s.action(run.device, i);
    if (limit_mb >= 0 && a.microbatch >= limit_mb) continue;
    int v = run.virtual_stage(a.chunk);
    if (a.kind == ActionKind::Forward && v > 0) post_recv(run, kActivation, a.microbatch, a.chunk);
    bool needs_gradient = a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
    if (needs_gradient && v < run.vstages() - 1) post_recv(run, kGradient, a.microbatch, a.chunk);
  }
}

// Ordered mode: posts, as one group each, the steps of this device's comm
// order due before action `before` of the program (its length: the steps
// after the last action). A program starts over when `before` goes back
// (the next iteration of a flush schedule) or the program changes.
void StageMessaging::post_ordered(const ActiveSchedule& run, std::int64_t before, std::int64_t limit_mb) {
  auto& o = ordered_;
  const Schedule& s = run.schedule;
  if (o.program != &s || o.microbatches != s.microbatches() || o.limit != limit_mb) {
    if (o.next != o.steps.size())
      throw std::logic_error("ordered messaging: a new program while the last one has steps unposted");
    o.steps = comm_order(s, limit_mb).devices[run.device];
    o.program = &s;
    o.microbatches = s.microbatches();
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
    messenger_.begin_group();
    for (const CommOp& op : o.steps[o.next].ops) {
      Dir dir = op.msg.dir == MessageDir::Activation ? kActivation : kGradient;
      int mb = op.msg.microbatch;
      if (!op.send) {
        post_recv(run, dir, mb, run.chunk_of(op.msg.vstage));
        continue;
      }
      auto it = o.outbox.find(std::make_tuple(static_cast<int>(dir), mb, op.msg.vstage));
      if (it == o.outbox.end())
        throw std::logic_error("ordered messaging: the order sends " + to_string(op.msg) + " before it was made");
      int from = dir == kActivation ? op.msg.vstage - 1 : op.msg.vstage + 1;
      EventClock::Mark t0 = telemetry_.mark();
      std::vector<at::Tensor> buf{std::move(it->second)};
      o.outbox.erase(it);
      auto work = messenger_.send(buf, op.peer, 0);
      std::int64_t bytes = buf[0].nbytes();
      sends_.push(std::move(buf), std::move(work));
      telemetry_.emit(run.event(EventKind::Send, mb, run.chunk_of(from), bytes), t0);
    }
    messenger_.end_group();
  }
}

void StageMessaging::end_program() {
  // Steps left unposted keep the program, so the next one still fails on them.
  if (ordered_.next == ordered_.steps.size()) ordered_.program = nullptr;
}

}  // namespace pw::rt::stage_impl
