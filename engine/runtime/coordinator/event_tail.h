#pragma once
#include <ios>
#include <string>
#include <vector>

#include "core/events/event.h"

namespace pw::rt {

// Follows a stage's event file (JSON lines) as the worker appends to it;
// a line without its newline yet waits for the next poll.
class EventTail {
 public:
  explicit EventTail(std::string file) : file_(std::move(file)) {}
  void poll(std::vector<Event>& out);

 private:
  std::string file_;
  std::streamoff pos_ = 0;
  std::string partial_;
};

}  // namespace pw::rt
