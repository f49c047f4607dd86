// The order stages post their sends and receives in for NCCL (issue 18):
// for every schedule and shape, the conservative NCCL simulation finishes
// with every send met by the receive of the same message; and the checker
// does catch the orders that fail (posting at use deadlocks 1F1B, two
// swapped receives pair the wrong messages).
#include <gtest/gtest.h>

#include <iterator>
#include <stdexcept>
#include <string>

#include "core/schedule/comm_order.h"
#include "core/schedule/schedule.h"

namespace pw {
namespace {

struct Shape {
  ScheduleKind kind;
  int devices, microbatches, chunks;
};

std::string name(const Shape& c) {
  return to_string(c.kind) + " p=" + std::to_string(c.devices) + " m=" + std::to_string(c.microbatches) +
         " v=" + std::to_string(c.chunks);
}

// Every shape make_schedule accepts in these ranges (it refuses, e.g.,
// interleaved with microbatches not a multiple of devices).
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::PipeDream,
                         ScheduleKind::Interleaved, ScheduleKind::ZBH1, ScheduleKind::ZBH2, ScheduleKind::ZBV,
                         ScheduleKind::DualPipeV})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 12; ++m)
        for (int v = 1; v <= 3; ++v) {
          if (k != ScheduleKind::Interleaved && v != (is_v_shape(k) ? 2 : 1)) continue;
          try {
            make_schedule(k, p, m, v);
            out.push_back({k, p, m, v});
          } catch (const std::invalid_argument&) {
          }
        }
  return out;
}

TEST(CommOrder, EveryScheduleAndShapeCompletesWithEveryPairMatched) {
  int checked = 0, v_shaped = 0, interleaved = 0;
  for (const Shape& c : shapes()) {
    auto s = make_schedule(c.kind, c.devices, c.microbatches, c.chunks);
    CommOrder o = comm_order(*s);
    EXPECT_EQ(check_comm_order(*s, o), "") << name(c);
    // The step's all-reduce (clipping, the non-finite check; refused for
    // PipeDream) shares NCCL's stream with the point-to-point operations:
    // on flush schedules every device has posted all of them before it.
    if (s->flushes())
      for (int d = 0; d < c.devices; ++d) {
        std::int64_t step = s->length(d) - 1;
        ASSERT_EQ(s->action(d, step).kind, ActionKind::OptimizerStep) << name(c);
        for (const auto& st : o.devices[d]) EXPECT_LE(st.before_action, step) << name(c) << " device " << d;
      }
    ++checked;
    v_shaped += is_v_shape(c.kind) && c.devices > 1;
    interleaved += c.kind == ScheduleKind::Interleaved && c.chunks > 1 && c.devices > 1;
  }
  // The ranges reach every family with several devices (a refusal of
  // every shape would pass vacuously).
  EXPECT_GT(checked, 300);
  EXPECT_GT(v_shaped, 20);
  EXPECT_GT(interleaved, 20);
}

// The engine runs PipeDream as one program over 2 x ceil(total / 2)
// microbatches and skips those past `total` (runtime/stage/async_program.cpp).
TEST(CommOrder, AsyncProgramWithSkippedMicrobatches) {
  for (int p = 2; p <= 5; ++p)
    for (std::int64_t total = 1; total <= 13; ++total) {
      auto s = make_schedule(ScheduleKind::PipeDream, p, static_cast<int>((total + 1) / 2), 1);
      CommOrder o = comm_order(*s, total);
      EXPECT_EQ(check_comm_order(*s, o, total), "") << "p=" << p << " total=" << total;
      // Nothing of a skipped microbatch is posted.
      for (const auto& steps : o.devices)
        for (const auto& st : steps)
          for (const auto& op : st.ops) EXPECT_LT(op.msg.microbatch, total);
    }
}

// Counted independently of the order: one send and one receive per
// message between two devices, 2 (p - 1) messages per microbatch on a
// straight pipeline.
TEST(CommOrder, PostsEachMessageOnceAtBothEnds) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZBH1}) {
    auto s = make_schedule(k, 4, 6, 1);
    CommOrder o = comm_order(*s);
    int sends = 0, recvs = 0;
    for (const auto& steps : o.devices)
      for (const auto& st : steps)
        for (const auto& op : st.ops) (op.send ? sends : recvs)++;
    EXPECT_EQ(sends, 2 * 3 * 6) << to_string(k);
    EXPECT_EQ(recvs, 2 * 3 * 6) << to_string(k);
  }
  // A V's fold (virtual stages p-1 and p on the last device) is no message.
  auto v = make_schedule(ScheduleKind::ZBV, 3, 6, 2);
  int sends = 0;
  for (const auto& steps : comm_order(*v).devices)
    for (const auto& st : steps)
      for (const auto& op : st.ops) sends += op.send;
  EXPECT_EQ(sends, 2 * (2 * 3 - 2) * 6);
}

// Each device posts a receive right before the action that uses it and a
// send right after the action that made it, one operation at a time: what
// a tagged transport gets away with. Under NCCL's matching, 1F1B's steady
// state deadlocks (each neighbour sends before it receives).
CommOrder post_at_use(const Schedule& s) {
  CommOrder o;
  o.devices.resize(s.devices());
  int last = s.virtual_stages() - 1;
  for (int d = 0; d < s.devices(); ++d)
    for (std::int64_t i = 0; i < s.length(d); ++i) {
      Action a = s.action(d, i);
      int v = s.virtual_stage(d, a.chunk);
      auto op = [&](std::int64_t before, bool send, int peer_vs, MessageDir dir, int msg_vs) {
        int peer = s.device_of_virtual_stage(peer_vs);
        if (peer != d) o.devices[d].push_back({before, {CommOp{send, peer, {dir, a.microbatch, msg_vs}}}});
      };
      if (a.kind == ActionKind::Forward) {
        if (v > 0) op(i, false, v - 1, MessageDir::Activation, v);
        if (v < last) op(i + 1, true, v + 1, MessageDir::Activation, v + 1);
      } else if (a.kind == ActionKind::Backward) {
        if (v < last) op(i, false, v + 1, MessageDir::Gradient, v);
        if (v > 0) op(i + 1, true, v - 1, MessageDir::Gradient, v - 1);
      }
    }
  return o;
}

TEST(CommOrder, CheckerReportsTheDeadlockOfPostingAtUseUnder1F1B) {
  auto s = make_schedule(ScheduleKind::OneFOneB, 2, 4);
  std::string r = check_comm_order(*s, post_at_use(*s));
  EXPECT_NE(r.find("deadlock"), std::string::npos) << r;
  // Device 0 is stuck sending microbatch 1's activation, device 1 sending
  // microbatch 0's gradient.
  EXPECT_NE(r.find("device 0 waits on its send of activation(mb 1, vstage 1)"), std::string::npos) << r;
  EXPECT_NE(r.find("device 1 waits on its send of gradient(mb 0, vstage 0)"), std::string::npos) << r;
  // GPipe has no such crossing: the same naive rule completes there.
  auto g = make_schedule(ScheduleKind::GPipe, 2, 4);
  EXPECT_EQ(check_comm_order(*g, post_at_use(*g)), "");
}

TEST(CommOrder, CheckerReportsSwappedReceivesAsAMismatch) {
  auto s = make_schedule(ScheduleKind::GPipe, 2, 4);
  CommOrder o = comm_order(*s);
  ASSERT_EQ(check_comm_order(*s, o), "");
  // Device 1's first two receives (activations of microbatches 0 and 1).
  std::vector<CommOp*> recvs;
  for (auto& st : o.devices[1])
    for (auto& op : st.ops)
      if (!op.send) recvs.push_back(&op);
  ASSERT_GE(recvs.size(), 2u);
  std::swap(recvs[0]->msg, recvs[1]->msg);
  std::string r = check_comm_order(*s, o);
  EXPECT_NE(r.find("mismatch: device 0's send of activation(mb 0, vstage 1) met device 1's receive expecting "
                   "activation(mb 1, vstage 1)"),
            std::string::npos)
      << r;
}

// Device 2's last receive (microbatch 2's activation, which its third
// forward, action 4 of F B F B F B, needs) left out.
TEST(CommOrder, CheckerReportsAMissingReceive) {
  auto s = make_schedule(ScheduleKind::OneFOneB, 3, 3);
  CommOrder o = comm_order(*s);
  ASSERT_EQ(check_comm_order(*s, o), "");
  auto& steps = o.devices[2];
  for (auto st = steps.rbegin(); st != steps.rend(); ++st)
    for (auto op = st->ops.rbegin(); op != st->ops.rend(); ++op)
      if (!op->send) {
        ASSERT_EQ(op->msg, (MessageId{MessageDir::Activation, 2, 2}));
        st->ops.erase(std::next(op).base());
        std::string r = check_comm_order(*s, o);
        EXPECT_NE(r.find("device 2 runs action 4 needing activation(mb 2, vstage 2) that it has not received"),
                  std::string::npos)
            << r;
        return;
      }
  FAIL() << "device 2 receives nothing";
}

}  // namespace
}  // namespace pw
