#pragma once
#include <optional>
#include <vector>

#include "core/events/event.h"

namespace pw {

// What a send holds its sender, fitted to a run's send events as
// per_message_us + bytes at gbps: least squares over the mean time per
// message size, after each device's first iteration (whose sends meet
// connection set-up and cold caches). Means, not medians: on a shared CPU a
// few sends stall on the socket for milliseconds (the median send of 2
// samples took 44 us, the mean 262 us), and the iteration pays every one.
// One message size gives a per-message time only (gbps 0). nullopt when
// there are no sends.
struct SendCost {
  double per_message_us = 0;
  double gbps = 0;  // 0: no per-byte term
};
std::optional<SendCost> fit_send_cost(const std::vector<Event>& events);

}  // namespace pw
