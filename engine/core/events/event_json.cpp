#include "core/events/event_json.h"

#include <filesystem>
#include <fstream>

namespace pw {

nlohmann::json event_to_json(const Event& e) {
  nlohmann::json j = {{"kind", to_string(e.kind)}, {"stage", e.stage},       {"mb", e.microbatch},
                      {"chunk", e.chunk},          {"start_ns", e.start_ns}, {"end_ns", e.end_ns},
                      {"bytes", e.bytes},          {"first_layer", e.first_layer}, {"last_layer", e.last_layer}};
  if (e.replica != 0) j["replica"] = e.replica;  // one pipeline's lines stay as they were
  return j;
}

std::optional<Event> event_from_json_line(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return event_from_json(j);
}

std::optional<Event> event_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  Event e;
  e.kind = event_kind_from_string(j.value("kind", "idle")).value_or(EventKind::Idle);
  e.stage = j.value("stage", 0);
  e.microbatch = j.value("mb", -1);
  e.chunk = j.value("chunk", 0);
  e.replica = j.value("replica", 0);
  e.start_ns = j.value("start_ns", 0LL);
  e.end_ns = j.value("end_ns", 0LL);
  e.bytes = j.value("bytes", 0LL);
  e.first_layer = j.value("first_layer", -1);
  e.last_layer = j.value("last_layer", -1);
  return e;
}

std::vector<Event> read_event_files(const std::string& run_dir) {
  std::vector<Event> out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(run_dir + "/events", ec)) {
    if (f.path().extension() != ".jsonl") continue;
    std::ifstream in(f.path());
    for (std::string line; std::getline(in, line);)
      if (auto e = event_from_json_line(line)) out.push_back(*e);
  }
  return out;
}

}  // namespace pw
