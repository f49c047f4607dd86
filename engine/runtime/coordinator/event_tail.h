#pragma once
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/events/run_records.h"
#include "core/events/line_tail.h"

namespace pw::rt {

// Follows a stage's event file (event_json lines) as the worker appends to
// it (core/events/line_tail.h), and its memory samples beside it
// (runtime/memory_samples.h), whose stale file of an earlier run in the
// same directory is removed first, as run.cpp removes the event file.
class EventTail {
 public:
  explicit EventTail(std::string file);
  void poll(std::vector<Event>& out);
  void poll_memory(std::vector<MemorySample>& out);

 private:
  LineTail lines_;
  LineTail memory_;
};

}  // namespace pw::rt
