#pragma once
// The order in which each device posts its point-to-point sends and
// receives, derived from a schedule, for transports that match by issue
// order rather than by tag. NCCL pairs the k-th send from A to B with the
// k-th receive on B from A, ignores tags, and runs a device's operations
// one after another on its stream: posting "as soon as ready" (a send
// right after the action that produced it, a receive right before the
// action that needs it) deadlocks 1F1B's steady state, where neighbours
// each send before they receive.
//
// The rule (comm_order.cpp): serialize every device's actions into one
// global order (a lock-step run of the schedule), number each message by
// the position of the action that produces it, and let every device post
// its operations in increasing message number. Everything a device posts
// between two of its actions is one group. Because both ends of every pair
// see messages in the same global order, the lowest unfinished message
// always has both its ends posted, so nothing waits forever and per-pair
// FIFO matching pairs each send with its own receive. check_comm_order
// verifies that claim by simulation for a concrete schedule.
#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"

namespace pw {

enum class MessageDir : std::uint8_t { Activation = 0, Gradient = 1 };

// A tensor between two virtual stages, named by the virtual stage that
// receives it: the activation into `vstage`, or the gradient of `vstage`'s
// output (sent by vstage + 1).
struct MessageId {
  MessageDir dir = MessageDir::Activation;
  int microbatch = 0;
  int vstage = 0;
  bool operator==(const MessageId& o) const {
    return dir == o.dir && microbatch == o.microbatch && vstage == o.vstage;
  }
  bool operator!=(const MessageId& o) const { return !(*this == o); }
};
std::string to_string(const MessageId& m);

struct CommOp {
  bool send = false;
  int peer = 0;  // the other device
  MessageId msg;
};

// Operations a device posts, as one group and in this order, right before
// its action `before_action` (== the device's length: after its last one).
struct CommStep {
  std::int64_t before_action = 0;
  std::vector<CommOp> ops;
};

struct CommOrder {
  std::vector<std::vector<CommStep>> devices;  // per device, in posting order
};

// The order for `s`. Actions whose microbatch is >= microbatch_limit (when
// that is >= 0) are left out, as the engine's async program skips them.
// Hand-offs between two chunks of one device are no messages. Throws
// std::logic_error if the schedule itself cannot run (an action waits for
// a message nothing produces).
CommOrder comm_order(const Schedule& s, std::int64_t microbatch_limit = -1);

// Simulates `order` on `s` under NCCL's semantics, conservatively: each
// device alternates its actions with its steps strictly in order; a group
// completes only once every operation in it is matched; matching is FIFO
// per directed device pair, tags ignored; an action runs only once the
// messages it needs were received. Empty when the order completes with
// every send matched to the receive of the same message; otherwise a
// description: a mismatch (the send of X met a receive expecting Y), a
// message used before it was received or sent before it was produced, or a
// deadlock listing what each stuck device waits on.
std::string check_comm_order(const Schedule& s, const CommOrder& order, std::int64_t microbatch_limit = -1);

}  // namespace pw
