#include "core/events/event.h"

namespace pw {
namespace {
constexpr const char* kNames[kEventKindCount] = {"forward", "backward",  "recompute", "swap_out",       "swap_in",
                                                 "send",    "recv",      "optimizer", "migrate",        "idle",
                                                 "backward_input",       "backward_weight", "allreduce",
                                                 "tensor_allreduce"};
}

const char* to_string(EventKind k) {
  auto i = static_cast<int>(k);
  return i >= 0 && i < kEventKindCount ? kNames[i] : "?";
}

std::optional<EventKind> event_kind_from_string(const std::string& s) {
  for (int i = 0; i < kEventKindCount; ++i)
    if (s == kNames[i]) return static_cast<EventKind>(i);
  return std::nullopt;
}

}  // namespace pw
