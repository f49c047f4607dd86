// One error path for damaged recordings (issue 41, items 3 and 4). Damage
// the reader meets, at open or in the middle of a query (corrupt pages, a
// table or column changed after recording, a JSON column that does not parse
// or is not the writer's document), is db::DamagedRecording: the file named,
// no SQLite or JSON library text. A search is never stored into a file that
// SQLite's integrity check fails, and the file is left as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>

#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/search_tables.h"
#include "db/sqlite_util.h"
#include "db_test_util.h"

using namespace pw;

namespace {

constexpr std::int64_t kPage = 16384;  // the writer's page size

// A finished run with enough events and log lines that each table spans
// several pages, a job, a plan, a summary and a subnet.
std::string record(const test::TempDir& d, const std::string& name = "run.sqlite") {
  auto path = d.file(name);
  db::RunWriter w(path, {"", "damage", "run", 4});
  for (int i = 0; i < 20000; ++i) w.on_event(test::synthetic_event(i));
  for (int i = 0; i < 3000; ++i)
    w.log({i * 1000, LogLevel::Info, "test", "log line " + std::to_string(i) + " with some words to fill pages"});
  w.job(nlohmann::json{{"name", "damage"}, {"pipeline", {{"stages", 4}}}});
  w.plan(1, 0, "initial", nlohmann::json{{"planner", "uniform"}, {"stages", nlohmann::json::array()}});
  w.summary(nlohmann::json{{"events", 20000}});
  w.subnet(0, nlohmann::json::array({1, 2, 3}));
  w.finish(RunStatus::Finished);
  return path;
}

void sql(const std::string& path, const std::string& statements) {
  db::Connection c(path, db::Connection::Mode::ReadWrite);
  c.exec(statements);
}

std::int64_t root_page(const std::string& path, const std::string& table) {
  db::Connection c(path, db::Connection::Mode::ReadOnly);
  db::Statement s(c, "SELECT rootpage FROM sqlite_master WHERE name = ?");
  s.bind(1, std::string_view(table));
  std::int64_t page = s.step() ? s.int64(0) : 0;
  s.reset();
  return page;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void overwrite(const std::string& path, std::int64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// What `f` threw as DamagedRecording; fails the test for anything else.
std::string damage_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const db::DamagedRecording& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a DamagedRecording: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// The file named, in our words: none of SQLite's or nlohmann's text.
void expect_clean(const std::string& msg, const std::string& path) {
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("damaged recording"), std::string::npos) << msg;
  for (const char* raw : {"json.exception", "malformed", "no such", "SQL logic", "parse_error", "type_error", "syntax error"})
    EXPECT_EQ(msg.find(raw), std::string::npos) << msg;
}

}  // namespace

TEST(RunDbDamage, CorruptPagesFoundMidQueryAreDamagedRecording) {
  test::TempDir d;
  auto path = record(d);
  // The logs table's root page: the open never reads it, its first query does.
  auto root = root_page(path, "logs");
  ASSERT_GT(root, 1);
  std::mt19937 rng(5);
  std::string junk(kPage, '\0');
  for (auto& c : junk) c = static_cast<char>(rng());
  overwrite(path, (root - 1) * kPage, junk);
  db::RunReader r(path);
  auto msg = damage_of([&] { r.logs(); });
  expect_clean(msg, path);
  EXPECT_NE(msg.find("damaged pages"), std::string::npos) << msg;
}

TEST(RunDbDamage, ColumnsChangedAfterRecordingAreNamedAtOpen) {
  test::TempDir d;
  auto path = record(d);
  sql(path, "ALTER TABLE events RENAME COLUMN bytes TO b");
  auto msg = damage_of([&] { db::RunReader r(path); });
  expect_clean(msg, path);
  EXPECT_NE(msg.find("events.bytes is missing"), std::string::npos) << msg;
}

TEST(RunDbDamage, TablesChangedMidQueryAreDamagedRecording) {
  test::TempDir d;
  auto path = record(d);
  db::store_search(path, db::SearchRecord{0, "random", 0, 10, "custom", 1, {}});
  // The search tables are optional (1.0 files lack them): read only by searches().
  sql(path, "ALTER TABLE search_subnets RENAME COLUMN pareto TO p");
  db::RunReader r(path);
  expect_clean(damage_of([&] { r.searches(); }), path);
}

// The range query's bound comes from stage_stats, which the open does not
// scan: INT64_MIN there overflowed `t0 - longest` (UBSan, fuzz_recording).
TEST(RunDbDamage, RangeQueryBoundOutOfRangeIsDamage) {
  test::TempDir d;
  auto path = record(d);
  sql(path, "UPDATE stage_stats SET max_duration_ns = -9223372036854775808 WHERE stage = 0");
  db::RunReader r(path);
  auto msg = damage_of([&] { r.events(0, 0, 1000000); });
  expect_clean(msg, path);
  EXPECT_NE(msg.find("stage_stats.max_duration_ns of stage 0"), std::string::npos) << msg;
  EXPECT_FALSE(r.events(1, 0, 1000000).empty()) << "the other stages still read";
}

// A stage's time summed over its event kinds leaves int64's range when each
// kind's own sum (SQLite's, in range) is huge: the totals stop at its end
// instead of overflowing (UBSan, fuzz_recording, 2026-12-07).
TEST(RunDbDamage, StageTotalsBeyondInt64StopAtItsEnd) {
  test::TempDir d;
  auto path = record(d);
  // At most three events of each kind on stage 0, each as long as the
  // reader's bound on times allows (+-(2^60 - 1) ns): a kind sums to about
  // 1.5 x 2^62 (SQLite's sum, in range), two kinds past INT64_MAX.
  sql(path, "DELETE FROM events WHERE stage = 0 AND (SELECT count(*) FROM events f WHERE f.stage = 0 AND "
            "f.kind = events.kind AND f.rowid <= events.rowid) > 3");
  sql(path, "UPDATE events SET start_ns = -1152921504606846975, end_ns = 1152921504606846975 WHERE stage = 0");
  db::RunReader r(path);
  std::vector<db::StageEventStats> stats;
  ASSERT_NO_THROW(stats = r.stage_stats());
  int kinds = 0;
  for (const auto& s : stats)
    if (s.stage == 0) {
      for (auto n : s.by_kind) kinds += n > 0;
      ASSERT_GE(kinds, 2) << "the recording must give stage 0 two kinds of event";
      EXPECT_EQ(s.duration_ns, std::numeric_limits<std::int64_t>::max());
    }
  EXPECT_GE(kinds, 2) << "no stage 0 in stage_stats";
}

TEST(RunDbDamage, JsonColumnsThatAreNotTheWritersDocuments) {
  struct Column {
    const char* update;  // SQL with ?1 for the text
    const char* name;
    std::function<void(db::RunReader&)> read;
  };
  const std::vector<Column> columns = {
      {"UPDATE run SET job_json = ?1", "run.job_json", [](db::RunReader& r) { r.job(); }},
      {"UPDATE run SET profile_json = ?1", "run.profile_json", [](db::RunReader& r) { r.profile(); }},
      {"UPDATE run SET summary_json = ?1", "run.summary_json", [](db::RunReader& r) { r.summary(); }},
      {"UPDATE plans SET plan_json = ?1", "plans.plan_json", [](db::RunReader& r) { r.plans(); }},
      {"UPDATE subnets SET choices_json = ?1", "subnets.choices_json", [](db::RunReader& r) { r.subnets(); }},
  };
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  test::TempDir d;
  auto original = record(d);
  for (const auto& col : columns) {
    for (const std::string& text : {std::string("{\"name\": "), std::string("\xff\xfe"), deep, std::string("[1, 2]")}) {
      // A list is a document only where the writer stores one (subnet choices).
      if (text == "[1, 2]" && std::string(col.name) == "subnets.choices_json") continue;
      auto path = d.file("json.sqlite");
      std::filesystem::copy_file(original, path, std::filesystem::copy_options::overwrite_existing);
      {
        db::Connection c(path, db::Connection::Mode::ReadWrite);
        db::Statement(c, col.update).bind(1, std::string_view(text)).run();
      }
      db::RunReader r(path);
      auto msg = damage_of([&] { col.read(r); });
      expect_clean(msg, path);
      EXPECT_NE(msg.find(col.name), std::string::npos) << col.name << ": " << msg;
    }
  }
}

TEST(RunDbDamage, StoreSearchRefusesAFileFailingTheIntegrityCheck) {
  test::TempDir d;
  auto original = record(d);
  auto path = d.file("flipped.sqlite");
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(original));
  // The reproducer: 64 bytes flipped in the middle of the file, in a
  // place the reader's open does not read (an index page), so the file
  // opens and only SQLite's integrity check sees the damage.
  bool found = false;
  for (std::int64_t off = size / 2; off + 64 < size && !found; off += kPage / 4) {
    std::filesystem::copy_file(original, path, std::filesystem::copy_options::overwrite_existing);
    auto bytes = bytes_of(path).substr(static_cast<std::size_t>(off), 64);
    for (auto& c : bytes) c = static_cast<char>(~c);
    overwrite(path, off, bytes);
    try {
      db::RunReader r(path);
    } catch (const db::DbError&) {
      continue;
    }
    db::Connection c(path, db::Connection::Mode::ReadOnly);
    db::Statement s(c, "PRAGMA integrity_check(1)");
    found = s.step() && s.text(0) != "ok";
    s.reset();
  }
  ASSERT_TRUE(found) << "no offset gave a file that opens and fails the integrity check";
  const auto before = bytes_of(path);
  auto msg = damage_of([&] { db::store_search(path, db::SearchRecord{0, "random", 0, 10, "custom", 1, {}}); });
  expect_clean(msg, path);
  EXPECT_NE(msg.find("integrity check"), std::string::npos) << msg;
  EXPECT_EQ(bytes_of(path), before) << "the damaged file was written into";
  EXPECT_FALSE(std::filesystem::exists(path + "-journal"));
  // A whole file still takes the search.
  EXPECT_GT(db::store_search(original, db::SearchRecord{0, "random", 0, 10, "custom", 1, {}}), 0);
}
