#include "core/trace/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/events/event_kinds.h"

namespace pw {
namespace {
// Track ids: 3 per stage (compute, copy engine, links); the idle tracks
// follow all of them (3 * stages + stage) and the collective ones (the
// replicas' all-reduce) those (4 * stages + stage), so older ids stay.
int track(int stage, EventKind k, int stages) {
  const int lane = static_cast<int>(lane_of(k));
  return lane == static_cast<int>(EventLane::Collective) ? 4 * stages + stage : stage * 3 + lane;
}
void write_us(std::ostream& out, std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ns / 1000.0);
  out << buf;
}

// Tracks sort per stage: compute, idle causes (when declared), copy, link,
// collective.
int sort_index(int stage, int lane) { return stage * 5 + (lane == 0 ? 0 : lane + 1); }
}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::ostream& out, int stages, const std::string& process_name)
    : out_(out), stages_(stages), process_name_(process_name) {
  out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  declare_replica(0);
}

// One process per data-parallel replica (pid 1 + replica; replica 0 is the
// one a run without replicas has), declared when its first event comes:
// their stages share numbers, each process has its own stage tracks.
int ChromeTraceWriter::declare_replica(int replica) {
  replica = std::max(replica, 0);
  const int pid = 1 + replica;
  if (static_cast<int>(declared_.size()) > replica && declared_[replica]) return pid;
  if (static_cast<int>(declared_.size()) <= replica) declared_.resize(replica + 1, false);
  declared_[replica] = true;
  sep();
  out_ << R"({"ph":"M","pid":)" << pid << R"(,"name":"process_name","args":{"name":)"
       << nlohmann::json(replica == 0 ? process_name_ : process_name_ + " replica " + std::to_string(replica)).dump() << "}}";
  if (replica > 0) {
    sep();
    out_ << R"({"ph":"M","pid":)" << pid << R"(,"name":"process_sort_index","args":{"sort_index":)" << pid << "}}";
  }
  const char* lanes[kEventLaneCount] = {"compute", "copy", "link", "allreduce"};
  for (int s = 0; s < stages_; ++s)
    for (int l = 0; l < kEventLaneCount; ++l) {
      const int tid = l == static_cast<int>(EventLane::Collective) ? 4 * stages_ + s : s * 3 + l;
      sep();
      out_ << R"({"ph":"M","pid":)" << pid << R"(,"tid":)" << tid << R"(,"name":"thread_name","args":{"name":"stage )" << s
           << " " << lanes[l] << "\"}}";
      sep();
      out_ << R"({"ph":"M","pid":)" << pid << R"(,"tid":)" << tid << R"(,"name":"thread_sort_index","args":{"sort_index":)"
           << sort_index(s, l) << "}}";
    }
  return pid;
}

ChromeTraceWriter::~ChromeTraceWriter() { finish(); }

void ChromeTraceWriter::sep() {
  if (!first_) out_ << ",\n";
  first_ = false;
}

void ChromeTraceWriter::on_event(const Event& e) {
  const int pid = declare_replica(e.replica);
  sep();
  out_ << R"({"ph":"X","pid":)" << pid << R"(,"tid":)" << track(e.stage, e.kind, stages_) << R"(,"name":")" << to_string(e.kind);
  if (e.microbatch >= 0) out_ << " " << e.microbatch;
  out_ << R"(","cat":")" << to_string(e.kind) << R"(","ts":)";
  write_us(out_, e.start_ns);
  out_ << ",\"dur\":";
  write_us(out_, e.end_ns - e.start_ns);
  out_ << R"(,"args":{"microbatch":)" << e.microbatch << ",\"chunk\":" << e.chunk << ",\"layers\":\""
       << e.first_layer << "-" << e.last_layer << "\",\"bytes\":" << e.bytes << "}}";
}

void ChromeTraceWriter::on_memory(std::int32_t stage, std::int64_t t_ns, std::int64_t bytes) {
  sep();
  out_ << R"({"ph":"C","pid":1,"name":"memory stage )" << stage << R"(","ts":)";
  write_us(out_, t_ns);
  out_ << R"(,"args":{"MiB":)" << bytes / 1048576.0 << "}}";
}

void ChromeTraceWriter::flow(int id, int from_stage, std::int64_t from_ns, int to_stage, std::int64_t to_ns,
                             const std::string& name) {
  sep();
  out_ << R"({"ph":"s","pid":1,"tid":)" << from_stage * 3 << R"(,"id":)" << id << R"(,"name":")" << name
       << R"(","cat":"flow","ts":)";
  write_us(out_, from_ns);
  out_ << "}";
  sep();
  out_ << R"({"ph":"f","bp":"e","pid":1,"tid":)" << to_stage * 3 << R"(,"id":)" << id << R"(,"name":")" << name
       << R"(","cat":"flow","ts":)";
  write_us(out_, to_ns);
  out_ << "}";
}

void ChromeTraceWriter::declare_idle_tracks(int replica) {
  const int pid = declare_replica(replica);
  for (int s = 0; s < stages_; ++s) {
    sep();
    out_ << R"({"ph":"M","pid":)" << pid << R"(,"tid":)" << 3 * stages_ + s << R"(,"name":"thread_name","args":{"name":"stage )" << s
         << " idle\"}}";
    sep();
    out_ << R"({"ph":"M","pid":)" << pid << R"(,"tid":)" << 3 * stages_ + s << R"(,"name":"thread_sort_index","args":{"sort_index":)"
         << s * 5 + 1 << "}}";
  }
}

void ChromeTraceWriter::on_idle(const IdleInterval& i, int replica) {
  const int pid = declare_replica(replica);
  sep();
  out_ << R"({"ph":"X","pid":)" << pid << R"(,"tid":)" << 3 * stages_ + i.stage << R"(,"name":")" << cause_name(i)
       << R"(","cat":"idle_cause","ts":)";
  write_us(out_, i.start_ns);
  out_ << ",\"dur\":";
  write_us(out_, i.end_ns - i.start_ns);
  out_ << R"(,"args":{"cause":")" << to_string(i.cause) << R"(","peer":)" << i.peer << ",\"awaited\":\""
       << (i.peer < 0 ? "" : i.gradient ? "gradient" : "activation") << R"(","iteration":)" << i.iteration
       << ",\"microbatch\":" << i.microbatch << "}}";
}

void ChromeTraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  out_ << "\n]}\n";
  out_.flush();
}

}  // namespace pw
