// The stages' event files, followed while the run goes on.
#include "runtime/coordinator/event_tail.h"

#include "core/events/event_json.h"
#include "runtime/coordinator/coordinator_impl.h"

namespace pw::rt {

void EventTail::poll(std::vector<Event>& out) {
  for (const auto& line : lines_.poll())
    if (auto e = event_from_json_line(line)) out.push_back(*e);
}

void coordinator_impl::Coordinator::stream_events() {
  std::vector<Event> batch;
  for (auto& t : tails_) t.poll(batch);
  if (!batch.empty()) obs_->on_events(batch);
}

}  // namespace pw::rt
