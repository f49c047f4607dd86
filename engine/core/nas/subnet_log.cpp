#include "core/nas/subnet_log.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "core/events/event_json.h"

namespace pw::nas {
namespace {
std::optional<SubnetState> state_from_string(const std::string& s) {
  for (auto x : {SubnetState::Waiting, SubnetState::Forward, SubnetState::Backward, SubnetState::Update,
                 SubnetState::Done})
    if (s == to_string(x)) return x;
  return std::nullopt;
}
}  // namespace

void SubnetLogWriter::line(const std::string& s) {
  out_ << s << '\n';
  out_.flush();
}

void SubnetLogWriter::on_subnet(int id, const std::vector<int>& choices, std::int64_t t_ns) {
  line(nlohmann::json{{"r", "subnet"}, {"id", id}, {"choices", choices}, {"t", t_ns}}.dump());
}

void SubnetLogWriter::on_state(int id, SubnetState state, int stage, std::int64_t t_ns) {
  line(nlohmann::json{{"r", "state"}, {"id", id}, {"state", to_string(state)}, {"stage", stage}, {"t", t_ns}}.dump());
}

void SubnetLogWriter::on_wait(const SubnetWait& w) {
  line(nlohmann::json{{"r", "wait"}, {"waiter", w.waiter}, {"for", w.waited_for}, {"stage", w.stage},
                      {"layer", w.layer}, {"t", w.t_ns}}
           .dump());
}

void SubnetLogWriter::on_event(const Event& e) {
  nlohmann::json j = event_to_json(e);
  j["r"] = "event";
  line(j.dump());
}

void SubnetLogWriter::on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {
  line(nlohmann::json{{"r", "memory"}, {"stage", stage}, {"t", t_ns}, {"bytes", bytes}}.dump());
}

bool replay_subnet_log_line(const std::string& text, SubnetObserver* obs, EventSink* sink) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("r")) return false;
  try {
    const std::string r = j.at("r").get<std::string>();
    if (r == "subnet") {
      if (obs) obs->on_subnet(j.at("id").get<int>(), j.at("choices").get<std::vector<int>>(), j.at("t").get<std::int64_t>());
    } else if (r == "state") {
      auto st = state_from_string(j.at("state").get<std::string>());
      if (!st) return false;
      if (obs) obs->on_state(j.at("id").get<int>(), *st, j.at("stage").get<int>(), j.at("t").get<std::int64_t>());
    } else if (r == "wait") {
      SubnetWait w{j.at("waiter").get<int>(), j.at("for").get<int>(), j.at("stage").get<int>(),
                   j.at("layer").get<int>(), j.at("t").get<std::int64_t>()};
      if (obs) obs->on_wait(w);
    } else if (r == "event") {
      if (!event_kind_from_string(j.at("kind").get<std::string>())) return false;
      auto e = event_from_json(j);
      if (!e) return false;
      if (sink) sink->on_event(*e);
    } else if (r == "memory") {
      const auto bytes = j.at("bytes").get<std::int64_t>();
      if (bytes < 0) return false;
      if (sink) sink->on_memory(j.at("stage").get<std::int32_t>(), j.at("t").get<std::int64_t>(), bytes);
    } else {
      return false;
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

int SubnetLogTail::poll(SubnetObserver* obs, EventSink* sink) {
  const auto lines = lines_.poll();
  for (const auto& l : lines)
    if (!replay_subnet_log_line(l, obs, sink)) ++malformed_;
  return static_cast<int>(lines.size());
}

}  // namespace pw::nas
