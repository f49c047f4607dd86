#pragma once
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/line_tail.h"

namespace pw::rt {

// Follows a stage's event file (event_json lines) as the worker appends to
// it (core/events/line_tail.h).
class EventTail {
 public:
  explicit EventTail(std::string file) : lines_(std::move(file)) {}
  void poll(std::vector<Event>& out);

 private:
  LineTail lines_;
};

}  // namespace pw::rt
