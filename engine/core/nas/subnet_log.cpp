#include "core/nas/subnet_log.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

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
  line(nlohmann::json{{"r", "event"}, {"kind", to_string(e.kind)}, {"stage", e.stage}, {"subnet", e.microbatch},
                      {"start", e.start_ns}, {"end", e.end_ns}, {"bytes", e.bytes}, {"first", e.first_layer},
                      {"last", e.last_layer}}
           .dump());
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
      auto kind = event_kind_from_string(j.at("kind").get<std::string>());
      if (!kind) return false;
      Event e;
      e.kind = *kind;
      e.stage = j.at("stage").get<int>();
      e.microbatch = j.at("subnet").get<int>();
      e.start_ns = j.at("start").get<std::int64_t>();
      e.end_ns = j.at("end").get<std::int64_t>();
      e.bytes = j.value("bytes", std::int64_t{0});
      e.first_layer = j.value("first", -1);
      e.last_layer = j.value("last", -1);
      if (sink) sink->on_event(e);
    } else {
      return false;
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

int SubnetLogTail::poll(SubnetObserver* obs, EventSink* sink) {
  std::ifstream in(file_, std::ios::binary);
  if (!in) return 0;
  in.seekg(pos_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pos_ += static_cast<std::int64_t>(chunk.size());
  partial_ += chunk;
  int n = 0;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1, ++n)
    if (!replay_subnet_log_line(partial_.substr(start, nl - start), obs, sink)) ++malformed_;
  partial_.erase(0, start);
  return n;
}

}  // namespace pw::nas
