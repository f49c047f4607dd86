// The stages' event files, followed while the run goes on.
#include "runtime/coordinator/event_tail.h"

#include <fstream>
#include <iterator>

#include "core/events/event_json.h"
#include "runtime/coordinator/coordinator_impl.h"

namespace pw::rt {

void EventTail::poll(std::vector<Event>& out) {
  std::ifstream in(file_, std::ios::binary);
  if (!in) return;
  // Shorter than what was read: the file was started again (a worker
  // truncates its log on opening), so what follows is a new stream.
  in.seekg(0, std::ios::end);
  if (in.tellg() < pos_) {
    pos_ = 0;
    partial_.clear();
  }
  in.seekg(pos_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pos_ += static_cast<std::streamoff>(chunk.size());
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    if (auto e = event_from_json_line(partial_.substr(start, nl - start))) out.push_back(*e);
  partial_.erase(0, start);
}

void coordinator_impl::Coordinator::stream_events() {
  std::vector<Event> batch;
  for (auto& t : tails_) t.poll(batch);
  if (!batch.empty()) obs_->on_events(batch);
}

}  // namespace pw::rt
