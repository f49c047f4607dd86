#include "db/schema.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <vector>

#include "core/io/checked_write.h"
#include "db/search_tables.h"
#include "db/sqlite_util.h"

namespace pw::db {
namespace {

// Times are integer ns on the run's clock; optional integers are NULL when
// unknown. Tables are append-only while the run goes, so rowid order is
// the order of arrival.
constexpr const char* kSchemaSql = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE run(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  run_id TEXT NOT NULL,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  stages INTEGER NOT NULL,
  started_unix_ns INTEGER NOT NULL,
  ended_unix_ns INTEGER,
  job_json TEXT,
  profile_json TEXT,
  summary_json TEXT);
CREATE TABLE endpoints(name TEXT PRIMARY KEY, endpoint TEXT NOT NULL);
CREATE TABLE plans(version INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, reason TEXT NOT NULL, plan_json TEXT NOT NULL);
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  stage INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  microbatch INTEGER NOT NULL,
  chunk INTEGER NOT NULL,
  first_layer INTEGER NOT NULL,
  last_layer INTEGER NOT NULL,
  bytes INTEGER NOT NULL);
CREATE TABLE stage_stats(
  stage INTEGER PRIMARY KEY,
  max_duration_ns INTEGER NOT NULL);
CREATE TABLE memory(
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  stage INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  parameters INTEGER, optimizer INTEGER, stashed INTEGER, activations INTEGER,
  swapped_out INTEGER, prefetched INTEGER, budget INTEGER);
CREATE INDEX memory_by_time ON memory(t_ns, stage);
CREATE TABLE throughput(id INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, iteration INTEGER,
  samples_per_s REAL NOT NULL, iteration_ms REAL NOT NULL);
CREATE TABLE migrations(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  layer INTEGER NOT NULL, from_stage INTEGER NOT NULL, to_stage INTEGER NOT NULL, bytes INTEGER NOT NULL,
  plan_version INTEGER);
CREATE TABLE subnets(id INTEGER PRIMARY KEY, choices_json TEXT NOT NULL);
CREATE TABLE subnet_states(id INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, subnet INTEGER NOT NULL,
  stage INTEGER NOT NULL, phase TEXT NOT NULL);
CREATE INDEX subnet_states_by_time ON subnet_states(t_ns);
CREATE TABLE subnet_edges(id INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, resolved_ns INTEGER,
  waiter INTEGER NOT NULL, waited_for INTEGER NOT NULL, stage INTEGER NOT NULL, layer INTEGER NOT NULL);
CREATE TABLE logs(id INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, level TEXT NOT NULL, source TEXT NOT NULL,
  message TEXT NOT NULL);
)SQL";

// 1.2: which data-parallel replica of the pipeline an event belongs to.
// Added after kSchemaSql rather than inside it, because kSchemaSql is also
// the list of columns every 1.x file must have (written_columns below).
constexpr const char* kReplicaColumnSql = "ALTER TABLE events ADD COLUMN replica INTEGER;";
// 1.3: the same for memory samples, added the same way.
constexpr const char* kMemoryReplicaColumnSql = "ALTER TABLE memory ADD COLUMN replica INTEGER;";
// 1.4: a sample's high-water mark since the stage's previous one (a real
// run's iteration peak; NULL where unknown).
constexpr const char* kMemoryPeakColumnSql = "ALTER TABLE memory ADD COLUMN peak INTEGER;";

bool has_column(Connection& c, const char* table, const char* column) {
  Statement s(c, std::string("SELECT count(*) FROM pragma_table_info('") + table + "') WHERE name = '" + column + "'");
  bool yes = s.step() && s.int64(0) > 0;
  s.reset();
  return yes;
}

// A table's replica column (1.2 events, 1.3 memory): integers in
// [0, kMaxReplica], NULL (a row written without it) being replica 0.
void check_replicas(Connection& c, const std::string& table);

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

}  // namespace

void create_deferred_indexes(Connection& c) {
  c.exec("CREATE INDEX IF NOT EXISTS events_by_stage_time ON events(stage, start_ns);");
}

bool has_deferred_indexes(Connection& c) {
  Statement s(c, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_by_stage_time'");
  bool yes = s.step() && s.int64(0) > 0;
  s.reset();
  return yes;
}

bool events_have_replica(Connection& c) { return has_column(c, "events", "replica"); }
bool memory_has_replica(Connection& c) { return has_column(c, "memory", "replica"); }
bool memory_has_peak(Connection& c) { return has_column(c, "memory", "peak"); }

void create_schema(Connection& c) {
  Transaction t(c);
  c.exec(kSchemaSql);
  c.exec(kReplicaColumnSql);
  c.exec(kMemoryReplicaColumnSql);
  c.exec(kMemoryPeakColumnSql);
  create_search_tables(c);
  Statement m(c, "INSERT INTO meta(key, value) VALUES (?, ?)");
  m.bind(1, std::string_view("format")).bind(2, std::string_view(kFormatName)).run();
  m.bind(1, std::string_view("schema_major")).bind(2, std::string_view(std::to_string(kSchemaMajor))).run();
  m.bind(1, std::string_view("schema_minor")).bind(2, std::string_view(std::to_string(kSchemaMinor))).run();
  m.bind(1, std::string_view("writer")).bind(2, std::string_view("pipewright " PW_VERSION)).run();
  t.commit();
}

void check_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw DbRefused(path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw DbRefused(path + ": not a regular file");
  if (st.st_size == 0) throw DbRefused(path + ": empty file, not a Pipewright run database");
  unsigned char h[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DbRefused(path + ": cannot open for reading");
  in.read(reinterpret_cast<char*>(h), sizeof h);
  auto got = in.gcount();
  if (!has_sqlite_header(h, static_cast<std::size_t>(got)))
    throw DbRefused(path + ": not a Pipewright run database (not an SQLite file)");
  if (got < 100) throw DbRefused(path + ": truncated (" + std::to_string(got) + " bytes, shorter than an SQLite header)");
  std::uint32_t page = (std::uint32_t(h[16]) << 8) | h[17];
  if (page == 1) page = 65536;
  std::uint32_t pages = be32(h + 28);
  // The header's page count is valid only when its change counters agree,
  // and pages may still sit in the WAL after a crash; check only then.
  struct stat wal {};
  bool has_wal = stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  if (!has_wal && pages > 0 && be32(h + 24) == be32(h + 92)) {
    auto want = static_cast<std::uint64_t>(pages) * page;
    if (static_cast<std::uint64_t>(st.st_size) < want)
      throw DbRefused(path + ": truncated (" + std::to_string(st.st_size) + " bytes, its header says " +
                    std::to_string(want) + ")");
  }
}

namespace {

// The tables this version reads: each must be a plain table.
constexpr const char* kReadTables[] = {"meta",   "run",         "endpoints",     "plans",        "events", "stage_stats",
                                       "memory", "throughput",  "migrations",    "subnets",      "subnet_states",
                                       "subnet_edges", "logs"};

[[noreturn]] void refuse(const Connection& c, const std::string& why) { throw DamagedRecording(c.path(), why); }

std::vector<std::string> table_columns(Connection& c, const std::string& table) {
  std::vector<std::string> v;
  Statement s(c, "SELECT name FROM pragma_table_info(?)");
  s.bind(1, std::string_view(table));
  while (s.step()) v.push_back(s.text(0));
  return v;
}

// The columns of each table this version reads, taken from kSchemaSql
// itself (built once in memory), so the list cannot drift from the schema.
// Every 1.x file has at least these: a minor version only adds.
const std::map<std::string, std::vector<std::string>>& written_columns() {
  static const auto columns = [] {
    Connection mem(":memory:", Connection::Mode::Create);
    mem.exec(kSchemaSql);
    std::map<std::string, std::vector<std::string>> m;
    for (const char* t : kReadTables) m[t] = table_columns(mem, t);
    return m;
  }();
  return columns;
}

// Stages in [0, kMaxStages), times in +-kMaxAbsTimeNs, end >= start: one
// pass over the table, nothing allocated per row.
void check_rows(Connection& c, const std::string& table, const char* start, const char* end) {
  std::string e = end ? end : start;
  Statement s(c, "SELECT min(stage), max(stage), min(" + std::string(start) + "), max(" + e + "), sum(" + e + " < " + start +
                     "), sum(typeof(stage) != 'integer' OR typeof(" + start + ") != 'integer' OR typeof(" + e +
                     ") != 'integer') FROM " + table);
  if (!s.step() || s.is_null(0)) {
    s.reset();
    return;  // empty
  }
  std::int64_t lo = s.int64(0), hi = s.int64(1), t0 = s.int64(2), t1 = s.int64(3), backwards = s.int64(4), untyped = s.int64(5);
  s.reset();
  if (untyped > 0) refuse(c, table + ": " + std::to_string(untyped) + " row(s) with a stage or time that is not an integer");
  if (lo < 0 || hi >= kMaxStages)
    refuse(c, table + ".stage spans " + std::to_string(lo) + ".." + std::to_string(hi) + ", outside 0.." +
                  std::to_string(kMaxStages - 1));
  if (t0 < -kMaxAbsTimeNs || t1 > kMaxAbsTimeNs)
    refuse(c, table + " times span " + std::to_string(t0) + ".." + std::to_string(t1) + " ns, beyond +-2^60 ns");
  if (backwards > 0) refuse(c, table + ": " + std::to_string(backwards) + " row(s) end before they start");
}

}  // namespace

void check_schema_objects(Connection& c) {
  // Views, triggers and virtual tables run code when read: a file has none.
  {
    Statement s(c, "SELECT type, name, sql FROM sqlite_master WHERE type NOT IN ('table', 'index') OR "
                   "(type = 'table' AND sql LIKE 'CREATE VIRTUAL%')");
    if (s.step()) {
      std::string what = s.text(0) + " \"" + s.text(1) + "\"";
      s.reset();
      refuse(c, "its schema holds " + what + " (a run database has only tables and indexes)");
    }
  }
}

void check_contents(Connection& c) {
  for (const char* t : kReadTables) {
    Statement s(c, "SELECT type FROM sqlite_master WHERE name = ?");
    s.bind(1, std::string_view(t));
    bool is_table = s.step() && s.text(0) == "table";
    s.reset();
    if (!is_table) refuse(c, std::string("table \"") + t + "\" is missing");
    // A column gone or renamed would fail the first query that names it.
    auto have = table_columns(c, t);
    for (const auto& col : written_columns().at(t))
      if (std::find(have.begin(), have.end(), col) == have.end())
        refuse(c, std::string(t) + "." + col + " is missing (the table was changed after it was recorded)");
  }
  {
    Statement s(c, "SELECT stages, typeof(stages) FROM run WHERE id = 1");
    if (s.step()) {
      std::int64_t n = s.int64(0);
      std::string type = s.text(1);
      s.reset();
      if (type != "integer" || n < 0 || n > kMaxStages)
        refuse(c, "run.stages is " + (type == "integer" ? std::to_string(n) : type) + ", not an integer in 0.." +
                      std::to_string(kMaxStages));
    }
  }
  check_rows(c, "events", "start_ns", "end_ns");
  if (events_have_replica(c)) check_replicas(c, "events");
  if (memory_has_replica(c)) check_replicas(c, "memory");
  check_rows(c, "memory", "t_ns", nullptr);
}

namespace {
void check_replicas(Connection& c, const std::string& table) {
  // Event::replica and MemorySample::replica are 16 bits.
  Statement s(c, "SELECT min(replica), max(replica), sum(replica IS NOT NULL AND typeof(replica) != 'integer') FROM " + table);
  if (s.step() && !s.is_null(0)) {
    std::int64_t lo = s.int64(0), hi = s.int64(1), untyped = s.int64(2);
    s.reset();
    if (untyped > 0) refuse(c, table + ": " + std::to_string(untyped) + " row(s) with a replica that is not an integer");
    if (lo < 0 || hi > kMaxReplica)
      refuse(c, table + ".replica spans " + std::to_string(lo) + ".." + std::to_string(hi) + ", outside 0.." +
                    std::to_string(kMaxReplica));
  } else {
    s.reset();
  }
}
}  // namespace

void check_integrity(Connection& c) {
  Statement s(c, "PRAGMA integrity_check(1)");
  std::string verdict = s.step() ? s.text(0) : "no answer";
  s.reset();
  // Its one line names pages and cells in SQLite's words: the verdict is ours.
  if (verdict != "ok") refuse(c, "SQLite's integrity check fails (pages or indexes are corrupt); refusing to write into it");
}

std::string check_schema(Connection& c) {
  bool has_meta = false;
  {
    Statement s(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    if (s.step()) has_meta = s.int64(0) > 0;
    s.reset();
  }
  check_schema_objects(c);  // before reading meta: it could be a view
  if (!has_meta) throw DbRefused(c.path() + ": an SQLite file but not a Pipewright run database (no meta table)");
  std::string format, major = "?", minor = "0";
  Statement s(c, "SELECT key, value FROM meta");
  while (s.step()) {
    auto k = s.text(0);
    if (k == "format") format = s.text(1);
    if (k == "schema_major") major = s.text(1);
    if (k == "schema_minor") minor = s.text(1);
  }
  if (format != kFormatName)
    throw DbRefused(c.path() + ": an SQLite file but not a Pipewright run database (format \"" + format + "\")");
  int maj = 0;
  try {
    maj = std::stoi(major);
  } catch (...) {
    throw DbRefused(c.path() + ": meta.schema_major is \"" + major + "\", not a number");
  }
  if (maj > kSchemaMajor)
    throw DbRefused(c.path() + ": written with run schema " + major + "." + minor + " by a newer Pipewright; this build reads schema " +
                  std::to_string(kSchemaMajor) + ".x only: upgrade pipewright to read it");
  if (maj < 1) throw DbRefused(c.path() + ": unknown run schema version " + major + "." + minor);
  return major + "." + minor;
}

}  // namespace pw::db
