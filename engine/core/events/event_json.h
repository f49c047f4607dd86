#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/event.h"

namespace pw {

// The engine's event files (run_dir/events/stage<k>.jsonl): one event per
// line. Workers write them, the coordinator tails them, calibration and
// tests read them back; one definition of the line keeps them agreeing.
nlohmann::json event_to_json(const Event& e);
// nullopt for what is not a JSON object (a torn last line); other keys are
// left to the caller (a CSP record stream's "r").
std::optional<Event> event_from_json(const nlohmann::json& j);
std::optional<Event> event_from_json_line(const std::string& line);

// Every event of every stage file in `run_dir`/events (empty if none).
std::vector<Event> read_event_files(const std::string& run_dir);

}  // namespace pw
