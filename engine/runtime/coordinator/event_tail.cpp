// The stages' event files, followed while the run goes on.
#include "runtime/coordinator/event_tail.h"

#include <filesystem>

#include "core/events/event_json.h"
#include "runtime/coordinator/coordinator_impl.h"
#include "runtime/memory_samples.h"

namespace pw::rt {
namespace {
std::string fresh(const std::string& file) {
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return file;
}
}  // namespace

EventTail::EventTail(std::string file) : lines_(file), memory_(fresh(memory_file_of(file))) {}

void EventTail::poll_memory(std::vector<MemorySample>& out) {
  for (const auto& line : memory_.poll())
    if (auto m = memory_sample_from_json_line(line)) out.push_back(*m);
}

void EventTail::poll(std::vector<Event>& out) {
  for (const auto& line : lines_.poll())
    if (auto e = event_from_json_line(line)) out.push_back(*e);
}

void coordinator_impl::Coordinator::stream_events() {
  std::vector<Event> batch;
  for (auto& t : tails_) t.poll(batch);
  if (!batch.empty()) obs_->on_events(batch);
  std::vector<MemorySample> memory;
  for (auto& t : tails_) t.poll_memory(memory);
  if (!memory.empty()) obs_->on_memory(memory);
}

}  // namespace pw::rt
