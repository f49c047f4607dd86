#include "db/run_reader.h"

#include <algorithm>
#include <limits>

#include "core/events/event_kinds.h"
#include "core/spec/bounded_json.h"
#include "core/spec/spec_error.h"
#include "db/schema.h"
#include "db/sqlite_util.h"

namespace pw::db {
namespace {

// The replica is the last column read: a file before 1.2 has none and
// holds one pipeline (replica 0); NULL reads as 0 too.
std::string event_columns(bool has_replica) {
  return std::string("stage, kind, start_ns, end_ns, microbatch, chunk, first_layer, last_layer, bytes, ") +
         (has_replica ? "coalesce(replica, 0)" : "0");
}

Event event_row(const Statement& s, int o = 0) {
  Event e;
  e.stage = static_cast<std::int32_t>(s.int64(o + 0));
  auto k = s.int64(o + 1);
  e.kind = k >= 0 && k < kEventKindCount ? static_cast<EventKind>(k) : EventKind::Idle;
  e.start_ns = s.int64(o + 2);
  e.end_ns = s.int64(o + 3);
  e.microbatch = static_cast<std::int32_t>(s.int64(o + 4));
  e.chunk = static_cast<std::int16_t>(s.int64(o + 5));
  e.first_layer = static_cast<std::int32_t>(s.int64(o + 6));
  e.last_layer = static_cast<std::int32_t>(s.int64(o + 7));
  e.bytes = s.int64(o + 8);
  e.replica = static_cast<std::int16_t>(s.int64(o + 9));  // bounded by check_contents
  return e;
}

std::int64_t opt(const Statement& s, int col) { return s.is_null(col) ? -1 : s.int64(col); }

// Sums over a damaged or hostile file's times can leave int64's range
// (the fuzzer's recordings do): they stop at its ends rather than overflow.
void add_clamped(std::int64_t& total, std::int64_t x) {
  if (__builtin_add_overflow(total, x, &total))
    total = x > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

// As for events: the replica, 0 where the file (before 1.3) or the row has
// none; then the peak, NULL (-1) before 1.4.
std::string memory_columns(bool has_replica, bool has_peak) {
  return std::string("t_ns, stage, bytes, parameters, optimizer, stashed, activations, swapped_out, prefetched, budget, ") +
         (has_replica ? "coalesce(replica, 0)" : "0") + (has_peak ? ", peak" : ", NULL");
}

MemorySample memory_row(const Statement& s) {
  MemorySample m;
  m.t_ns = s.int64(0);
  m.stage = static_cast<std::int32_t>(s.int64(1));
  m.bytes = s.int64(2);
  m.parameters = opt(s, 3);
  m.optimizer = opt(s, 4);
  m.stashed = opt(s, 5);
  m.activations = opt(s, 6);
  m.swapped_out = opt(s, 7);
  m.prefetched = opt(s, 8);
  m.budget = opt(s, 9);
  m.replica = static_cast<std::int16_t>(s.int64(10));  // bounded by check_contents
  m.peak = opt(s, 11);
  return m;
}

// A JSON column as the writer wrote it: a document within the depth bound
// every input has (core/spec/bounded_json.h), of the kind the writer
// stores (`object`: a JSON object, else any value); NULL or '' is null.
nlohmann::json parse_column(const std::string& text, const std::string& path, const std::string& column, bool object) {
  if (text.empty()) return nullptr;
  nlohmann::json j;
  try {
    j = parse_bounded_json(text, column);
  } catch (const SpecError& e) {
    throw DamagedRecording(path, e.what());
  }
  if (object && !j.is_object()) throw DamagedRecording(path, column + " is " + j.type_name() + ", not a JSON object");
  return j;
}

}  // namespace

RunReader::RunReader(const std::string& path) : path_(path) {
  try {
    check_file(path);
    c_ = std::make_unique<Connection>(path, Connection::Mode::ReadWrite);
    c_->holds_recording();
    // No function of the file's schema runs with this process's rights.
    c_->exec("PRAGMA trusted_schema=OFF;");
    schema_ = check_schema(*c_);
    check_contents(*c_);
    has_replica_ = events_have_replica(*c_);
    event_columns_ = event_columns(has_replica_);
    memory_has_replica_ = memory_has_replica(*c_);
    memory_has_peak_ = memory_has_peak(*c_);
    memory_columns_ = memory_columns(memory_has_replica_, memory_has_peak_);
    refresh();
  } catch (const DbRefused&) {
    throw;
  } catch (const DbError& e) {
    throw DbRefused(e.what());  // whatever stops the open is a refusal of the file (exit 2)
  }
}

RunReader::~RunReader() = default;

void RunReader::refresh() {
  Statement s(*c_, "SELECT run_id, name, source, status, reason, stages, started_unix_ns, ended_unix_ns FROM run WHERE id = 1");
  if (!s.step()) throw DamagedRecording(path_, "the run table is empty (the file was never initialised)");
  RunRecord r;
  r.run_id = s.text(0);
  r.name = s.text(1);
  r.source = s.text(2);
  auto st = s.text(3);
  auto parsed = run_status_from_string(st);
  if (!parsed)
    throw DamagedRecording(path_, "run.status is \"" + clip_for_message(st, 40) + "\", not running|finished|failed|stopped|interrupted");
  r.status = *parsed;
  r.reason = s.text(4);
  if (s.int64(5) < 0 || s.int64(5) > kMaxStages)
    throw DamagedRecording(path_, "run.stages is " + std::to_string(s.int64(5)) + ", not in 0.." + std::to_string(kMaxStages));
  r.stages = static_cast<int>(s.int64(5));
  r.started_unix_ns = s.int64(6);
  r.ended_unix_ns = opt(s, 7);
  r.schema_version = schema_;
  s.reset();
  run_ = r;
}

nlohmann::json RunReader::run_json(const char* column) const {
  Statement s(*c_, std::string("SELECT ") + column + " FROM run WHERE id = 1");
  std::string text;
  if (s.step() && !s.is_null(0)) text = s.text(0);
  s.reset();
  return parse_column(text, path_, std::string("run.") + column, /*object=*/true);
}
nlohmann::json RunReader::job() const { return run_json("job_json"); }
nlohmann::json RunReader::profile() const { return run_json("profile_json"); }
nlohmann::json RunReader::summary() const { return run_json("summary_json"); }

std::map<std::string, std::string> RunReader::endpoints() const {
  std::map<std::string, std::string> m;
  Statement s(*c_, "SELECT name, endpoint FROM endpoints");
  while (s.step()) m[s.text(0)] = s.text(1);
  return m;
}

std::vector<PlanRecord> RunReader::plans() const {
  std::vector<PlanRecord> v;
  Statement s(*c_, "SELECT version, t_ns, reason, plan_json FROM plans ORDER BY version");
  while (s.step()) {
    PlanRecord p{static_cast<int>(s.int64(0)), s.int64(1), s.text(2), parse_column(s.text(3), path_, "plans.plan_json", /*object=*/true)};
    // The writer stores every plan it is given: an empty one is damage.
    if (p.plan.is_null()) throw DamagedRecording(path_, "plans.plan_json of plan " + std::to_string(p.version) + " is empty");
    v.push_back(std::move(p));
  }
  return v;
}

std::int64_t RunReader::event_count() const {
  Statement s(*c_, "SELECT count(*) FROM events");
  std::int64_t n = s.step() ? s.int64(0) : 0;
  s.reset();
  return n;
}

int RunReader::replicas() const {
  if (!has_replica_) return 1;
  Statement s(*c_, "SELECT max(coalesce(replica, 0)) FROM events");
  int n = s.step() && !s.is_null(0) ? static_cast<int>(s.int64(0)) + 1 : 1;
  s.reset();
  return n;
}

void RunReader::for_each_event(const std::function<void(const Event&)>& f) const {
  Statement s(*c_, "SELECT " + event_columns_ + " FROM events ORDER BY id");
  while (s.step()) f(event_row(s));
}

std::vector<Event> RunReader::events(int stage, std::int64_t t0, std::int64_t t1) const {
  std::int64_t longest = 0;
  {
    Statement m(*c_, "SELECT max_duration_ns FROM stage_stats WHERE stage = ?");
    m.bind(1, std::int64_t(stage));
    if (m.step()) longest = m.int64(0);
    m.reset();
  }
  // Events lie within +-kMaxAbsTimeNs (checked at open): a longer bound is damage.
  if (longest < 0 || longest > 2 * kMaxAbsTimeNs)
    throw DamagedRecording(path_, "stage_stats.max_duration_ns of stage " + std::to_string(stage) + " is " +
                                      std::to_string(longest) + ", outside 0..2^61 ns");
  // An event overlapping [t0, t1) starts no earlier than t0 - longest:
  // the index range stays bounded.
  const std::int64_t from = t0 < std::numeric_limits<std::int64_t>::min() + longest ? std::numeric_limits<std::int64_t>::min()
                                                                                      : t0 - longest;
  Statement s(*c_, "SELECT " + event_columns_ +
                       " FROM events WHERE stage = ? AND start_ns >= ? AND start_ns < ? AND end_ns > ? ORDER BY start_ns");
  s.bind(1, std::int64_t(stage)).bind(2, from).bind(3, t1).bind(4, t0);
  std::vector<Event> v;
  while (s.step()) {
    Event e = event_row(s);
    if (e.end_ns > t0 || (e.start_ns == e.end_ns && e.start_ns >= t0)) v.push_back(e);
  }
  return v;
}

std::vector<Event> RunReader::events_after(std::int64_t& after_id, std::size_t limit) const {
  Statement s(*c_, "SELECT " + event_columns_ + ", id FROM events WHERE id > ? ORDER BY id LIMIT ?");
  s.bind(1, after_id).bind(2, static_cast<std::int64_t>(limit));
  std::vector<Event> v;
  while (s.step()) {
    v.push_back(event_row(s));
    after_id = s.int64(10);
  }
  return v;
}

std::vector<MemorySample> RunReader::memory(std::int64_t t0, std::int64_t t1, int stage, int replica) const {
  std::string sql = "SELECT " + memory_columns_ + " FROM memory WHERE t_ns >= ? AND t_ns < ?";
  if (stage >= 0) sql += " AND stage = ?";
  // Before 1.3 every sample is replica 0's.
  if (replica > 0 && !memory_has_replica_) return {};
  const bool by_replica = replica >= 0 && memory_has_replica_;
  if (by_replica) sql += " AND coalesce(replica, 0) = ?";
  sql += " ORDER BY t_ns, stage, id";
  Statement s(*c_, sql);
  s.bind(1, t0).bind(2, t1);
  int k = 3;
  if (stage >= 0) s.bind(k++, std::int64_t(stage));
  if (by_replica) s.bind(k++, std::int64_t(replica));
  std::vector<MemorySample> v;
  while (s.step()) v.push_back(memory_row(s));
  return v;
}

void RunReader::for_each_memory(const std::function<void(const MemorySample&)>& f) const {
  Statement s(*c_, "SELECT " + memory_columns_ + " FROM memory ORDER BY id");
  while (s.step()) f(memory_row(s));
}

std::vector<ThroughputSample> RunReader::throughput() const {
  std::vector<ThroughputSample> v;
  Statement s(*c_, "SELECT t_ns, iteration, samples_per_s, iteration_ms FROM throughput ORDER BY id");
  while (s.step()) v.push_back({s.int64(0), opt(s, 1), s.real(2), s.real(3)});
  return v;
}

std::vector<Migration> RunReader::migrations() const {
  std::vector<Migration> v;
  Statement s(*c_, "SELECT start_ns, end_ns, layer, from_stage, to_stage, bytes, plan_version FROM migrations ORDER BY id");
  while (s.step()) {
    Migration m;
    m.start_ns = s.int64(0);
    m.end_ns = s.int64(1);
    m.layer = static_cast<std::int32_t>(s.int64(2));
    m.from_stage = static_cast<std::int32_t>(s.int64(3));
    m.to_stage = static_cast<std::int32_t>(s.int64(4));
    m.bytes = s.int64(5);
    m.plan_version = static_cast<std::int32_t>(opt(s, 6));
    v.push_back(m);
  }
  return v;
}

std::map<int, nlohmann::json> RunReader::subnets() const {
  std::map<int, nlohmann::json> m;
  Statement s(*c_, "SELECT id, choices_json FROM subnets ORDER BY id");
  while (s.step()) m[static_cast<int>(s.int64(0))] = parse_column(s.text(1), path_, "subnets.choices_json", /*object=*/false);
  return m;
}

std::vector<SubnetState> RunReader::subnet_states() const {
  std::vector<SubnetState> v;
  Statement s(*c_, "SELECT t_ns, subnet, stage, phase FROM subnet_states ORDER BY id");
  while (s.step()) {
    SubnetState x;
    x.t_ns = s.int64(0);
    x.subnet = static_cast<std::int32_t>(s.int64(1));
    x.stage = static_cast<std::int32_t>(s.int64(2));
    x.phase = subnet_phase_from_string(s.text(3)).value_or(SubnetPhase::Queued);
    v.push_back(x);
  }
  return v;
}

std::vector<SubnetEdge> RunReader::subnet_edges() const {
  std::vector<SubnetEdge> v;
  Statement s(*c_, "SELECT t_ns, resolved_ns, waiter, waited_for, stage, layer FROM subnet_edges ORDER BY id");
  while (s.step()) {
    SubnetEdge e;
    e.t_ns = s.int64(0);
    e.resolved_ns = opt(s, 1);
    e.waiter = static_cast<std::int32_t>(s.int64(2));
    e.waited_for = static_cast<std::int32_t>(s.int64(3));
    e.stage = static_cast<std::int32_t>(s.int64(4));
    e.layer = static_cast<std::int32_t>(s.int64(5));
    v.push_back(e);
  }
  return v;
}

std::vector<LogRecord> RunReader::logs() const {
  std::vector<LogRecord> v;
  Statement s(*c_, "SELECT t_ns, level, source, message FROM logs ORDER BY id");
  while (s.step()) {
    LogRecord l;
    l.t_ns = s.int64(0);
    auto lv = s.text(1);
    l.level = lv == "debug" ? LogLevel::Debug : lv == "warning" ? LogLevel::Warning : lv == "error" ? LogLevel::Error : LogLevel::Info;
    l.source = s.text(2);
    l.message = s.text(3);
    v.push_back(l);
  }
  return v;
}

std::vector<StageEventStats> RunReader::stage_stats() const {
  std::map<int, StageEventStats> m;
  for (int i = 0; i < run_.stages; ++i) m[i].stage = i;
  Statement s(*c_,
              "SELECT stage, kind, count(*), min(start_ns), max(end_ns), sum(end_ns - start_ns), sum(bytes) "
              "FROM events GROUP BY stage, kind");
  while (s.step()) {
    int st = static_cast<int>(s.int64(0));
    auto& x = m[st];
    x.stage = st;
    auto kind = s.int64(1);
    auto n = static_cast<std::uint64_t>(s.int64(2));
    if (x.events == 0 || s.int64(3) < x.first_start_ns) x.first_start_ns = s.int64(3);
    x.last_end_ns = std::max(x.last_end_ns, s.int64(4));
    x.events += n;
    add_clamped(x.duration_ns, s.int64(5));
    add_clamped(x.bytes, s.int64(6));
    if (kind >= 0 && kind < kEventKindCount) {
      x.by_kind[kind] += n;
      add_clamped(x.kind_ns[kind], s.int64(5));
      auto k = static_cast<EventKind>(kind);
      if (is_busy(k)) add_clamped(x.busy_ns, s.int64(5));
    }
  }
  // A run's samples are taken at iteration ends: its peak is the
  // iteration's high-water mark (1.4), where the file has one.
  Statement p(*c_, memory_has_peak_ ? "SELECT stage, max(max(bytes, coalesce(peak, bytes))) FROM memory GROUP BY stage"
                                    : "SELECT stage, max(bytes) FROM memory GROUP BY stage");
  while (p.step()) {
    int st = static_cast<int>(p.int64(0));
    m[st].stage = st;
    m[st].peak_memory_bytes = p.int64(1);
  }
  std::vector<StageEventStats> v;
  for (auto& [k, x] : m) v.push_back(x);
  return v;
}

}  // namespace pw::db
