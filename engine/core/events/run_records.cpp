#include "core/events/run_records.h"

#include <chrono>
#include <cstdio>
#include <iterator>
#include <random>

namespace pw {
namespace {
constexpr const char* kStatus[] = {"running", "finished", "failed", "stopped", "interrupted"};
constexpr const char* kPhase[] = {"queued", "forward", "backward", "blocked", "done"};
constexpr const char* kLevel[] = {"debug", "info", "warning", "error"};
}  // namespace

std::string new_run_id() {
  std::random_device rd;
  auto t = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::uint64_t v = ((std::uint64_t(rd()) << 32) | rd()) ^ (t * 0x9E3779B97F4A7C15ull);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

const char* to_string(RunStatus s) {
  auto i = static_cast<unsigned>(s);
  return i < 5 ? kStatus[i] : "?";
}
std::optional<RunStatus> run_status_from_string(const std::string& s) {
  for (unsigned i = 0; i < 5; ++i)
    if (s == kStatus[i]) return static_cast<RunStatus>(i);
  return std::nullopt;
}
const char* to_string(SubnetPhase p) {
  auto i = static_cast<unsigned>(p);
  return i < 5 ? kPhase[i] : "?";
}
std::optional<SubnetPhase> subnet_phase_from_string(const std::string& s) {
  for (unsigned i = 0; i < 5; ++i)
    if (s == kPhase[i]) return static_cast<SubnetPhase>(i);
  return std::nullopt;
}
const char* to_string(LogLevel l) {
  auto i = static_cast<unsigned>(l);
  return i < 4 ? kLevel[i] : "?";
}

std::size_t RunRecordBatch::record_count() const {
  return events.size() + memory.size() + throughput.size() + migrations.size() + subnet_states.size() +
         subnet_edges.size() + logs.size();
}

namespace {
template <class T>
void move_to_end(std::vector<T>& to, std::vector<T>& from) {
  if (to.empty()) {
    to = std::move(from);
  } else {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
  from.clear();
}
}  // namespace

void RunRecordBatch::append_records(RunRecordBatch&& from) {
  move_to_end(events, from.events);
  move_to_end(memory, from.memory);
  move_to_end(throughput, from.throughput);
  move_to_end(migrations, from.migrations);
  move_to_end(subnet_states, from.subnet_states);
  move_to_end(subnet_edges, from.subnet_edges);
  move_to_end(logs, from.logs);
}

void RunRecordBatch::clear_records() {
  events.clear();
  memory.clear();
  throughput.clear();
  migrations.clear();
  subnet_states.clear();
  subnet_edges.clear();
  logs.clear();
}

}  // namespace pw
