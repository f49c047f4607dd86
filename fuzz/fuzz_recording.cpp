// The recording readers on damaged copies of a real recording (issue 41):
// where fuzz_run_db feeds whole files (and so rarely gets past SQLite's
// header), this target starts from one recording the writer made and lets
// the input damage it, the ways files are damaged in practice:
//   byte 0 % 3 == 0: XOR patches, each [offset: 3 bytes][length: 1][bytes],
//                    anywhere in the file (pages, headers, b-tree cells);
//   byte 0 % 3 == 1: byte 1 picks a JSON column, the rest is its new text
//                    (deep nesting, bad UTF-8, documents of another shape);
//   byte 0 % 3 == 2: byte 1 picks a table and column, byte 2 a value of
//                    another type, the rest a row limit (SQL-level damage).
// Every accessor of db::RunReader is then called. The only outcome allowed
// for a bad file is db::DbError, and a DamagedRecording must speak our words:
// its message names the file and holds no SQLite or JSON library text. A
// crash, hang, sanitizer report or raw text (abort) is a finding.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/search_tables.h"
#include "db/sqlite_util.h"

namespace {

const std::string kDir = "/tmp/pw_fuzz_recording_" + std::to_string(::getpid());

// The undamaged recording: a few hundred events over 4 stages, memory,
// logs, a job, plan, profile, summary, subnets and a stored search.
const std::string& base_bytes() {
  static const std::string bytes = [] {
    std::string path = kDir + "/base.sqlite";
    std::remove(path.c_str());
    {
      pw::db::RunWriter w(path, {"", "fuzz", "simulate", 4});
      for (int i = 0; i < 400; ++i) {
        pw::Event e;
        e.stage = i % 4;
        e.kind = static_cast<pw::EventKind>(i % 3);
        e.start_ns = i * 1000;
        e.end_ns = i * 1000 + 700;
        e.microbatch = i % 8;
        e.bytes = 4096;
        w.on_event(e);
        w.on_memory(i % 4, i * 1000, 1 << 20);
      }
      for (int i = 0; i < 50; ++i) w.log({i, pw::LogLevel::Info, "fuzz", "line " + std::to_string(i)});
      w.job({{"name", "fuzz"}, {"pipeline", {{"stages", 4}, {"schedule", "1f1b"}}}, {"model", {{"kind", "uniform"}}}});
      w.profile({{"layers", nlohmann::json::array({{{"fwd_ms", 1.0}}})}});
      w.plan(1, 0, "initial", {{"planner", "uniform"}, {"stages", {{{"first_layer", 0}, {"last_layer", 3}}}}});
      w.summary({{"events", 400}, {"microbatches", 8}});
      w.subnet(0, nlohmann::json::array({1, 2}));
      w.finish(pw::RunStatus::Finished);
    }
    pw::db::SearchRecord s{0, "random", 0, 10, "custom", 1, {}};
    s.subnets.push_back({0, 0, {1, 2}, 0.5, 100, 1.0, true});
    pw::db::store_search(path, s);
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

const char* const kJsonColumns[][2] = {{"run", "job_json"},       {"run", "profile_json"},        {"run", "summary_json"},
                                       {"plans", "plan_json"},    {"subnets", "choices_json"},    {"search_subnets", "choices_json"}};
const char* const kColumns[][2] = {
    {"run", "stages"},      {"run", "status"},         {"run", "started_unix_ns"}, {"run", "ended_unix_ns"},
    {"events", "stage"},    {"events", "kind"},        {"events", "start_ns"},     {"events", "end_ns"},
    {"events", "bytes"},    {"memory", "stage"},       {"memory", "t_ns"},         {"memory", "bytes"},
    {"plans", "version"},   {"plans", "t_ns"},         {"stage_stats", "max_duration_ns"},
    {"logs", "level"},      {"logs", "message"},       {"meta", "value"},          {"searches", "method"},
    {"search_subnets", "accuracy"}, {"search_subnets", "search"}, {"subnets", "id"}};
const char* const kValues[] = {"'abc'", "1.5", "x'00ff'", "NULL", "9223372036854775807", "-9223372036854775808", "-1", "''"};

// SQL-level damage; SQLite refusing it (a constraint) leaves the file whole.
void damage_by_sql(const std::string& path, const std::string& sql) {
  try {
    pw::db::Connection c(path, pw::db::Connection::Mode::ReadWrite);
    c.exec(sql);
  } catch (const pw::db::DbError&) {
  }
}

void read_everything(const std::string& path) {
  pw::db::RunReader r(path);
  std::uint64_t n = 0;
  r.for_each_event([&](const pw::Event&) { ++n; });
  r.for_each_memory([&](const pw::MemorySample&) { ++n; });
  (void)r.event_count();
  (void)r.stage_stats();
  (void)r.job();
  (void)r.profile();
  (void)r.summary();
  (void)r.endpoints();
  (void)r.plans();
  (void)r.throughput();
  (void)r.migrations();
  (void)r.subnets();
  (void)r.subnet_states();
  (void)r.subnet_edges();
  (void)r.logs();
  (void)r.searches();
  (void)r.events(0, 0, 1000000);
  (void)r.memory(0, 1000000);
  std::int64_t after = 0;
  (void)r.events_after(after, 100);
  r.refresh();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const bool made = [] { return ::mkdir(kDir.c_str(), 0700) == 0 || errno == EEXIST; }();
  if (!made) return 0;
  const std::string& base = base_bytes();
  const std::string path = kDir + "/damaged.sqlite";
  const int mode = data[0] % 3;
  if (mode == 0) {
    std::string bytes = base;
    for (std::size_t i = 1; i + 4 <= size;) {
      std::size_t off = ((std::size_t(data[i]) << 16) | (std::size_t(data[i + 1]) << 8) | data[i + 2]) % bytes.size();
      std::size_t len = data[i + 3];
      i += 4;
      for (std::size_t k = 0; k < len && i < size; ++k, ++i) bytes[(off + k) % bytes.size()] ^= static_cast<char>(data[i]);
    }
    write_file(path, bytes);
  } else if (mode == 1) {
    write_file(path, base);
    const auto& col = kJsonColumns[data[1] % std::size(kJsonColumns)];
    pw::db::Connection c(path, pw::db::Connection::Mode::ReadWrite);
    pw::db::Statement(c, std::string("UPDATE ") + col[0] + " SET " + col[1] + " = ?")
        .bind(1, std::string_view(reinterpret_cast<const char*>(data + 2), size - 2))
        .run();
  } else {
    if (size < 3) return 0;
    write_file(path, base);
    const auto& col = kColumns[data[1] % std::size(kColumns)];
    std::string sql = std::string("UPDATE ") + col[0] + " SET " + col[1] + " = " + kValues[data[2] % std::size(kValues)];
    if (size > 3) sql += std::string(" WHERE rowid <= ") + std::to_string(data[3]);
    damage_by_sql(path, sql);
  }
  try {
    read_everything(path);
  } catch (const pw::db::DbError& e) {
    const std::string msg = e.what();
    const std::string input(reinterpret_cast<const char*>(data), size);
    bool named = msg.find(path) != std::string::npos;
    // Library text, unless the input itself put it there (a JSON key the
    // message names as part of a path).
    for (const char* raw : {"json.exception", "parse_error", "type_error", "malformed", "no such column", "no such table",
                            "SQL logic error", "prepare statement"})
      if (msg.find(raw) != std::string::npos && input.find(raw) == std::string::npos) named = false;
    if (!named) {
      std::fprintf(stderr, "a damaged recording reported without its name or in library text: %s\n", msg.c_str());
      std::abort();
    }
  }
  return 0;
}
