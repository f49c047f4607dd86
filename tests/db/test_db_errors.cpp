#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "db/run_reader.h"
#include "db/run_writer.h"
#include "db/sqlite_util.h"
#include "db_test_util.h"

namespace pw {
namespace {

// The reader's message for a file, or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    db::RunReader r(path);
    r.event_count();
    r.stage_stats();
    return "";
  } catch (const db::DbError& e) {
    return e.what();
  }
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string finished_run(const test::TempDir& d, int events = 50000) {
  auto path = d.file("ok.sqlite");
  db::RunWriter w(path, {"", "x", "run", 4});
  for (int i = 0; i < events; ++i) w.on_event(test::synthetic_event(i));
  w.finish(RunStatus::Finished);
  return path;
}

TEST(RunDbErrors, MissingEmptyAndGarbageFiles) {
  test::TempDir d;
  EXPECT_NE(open_error(d.file("none.sqlite")).find("no such file"), std::string::npos);
  write_file(d.file("empty.sqlite"), "");
  EXPECT_NE(open_error(d.file("empty.sqlite")).find("empty file"), std::string::npos);
  write_file(d.file("text.sqlite"), "this is a text file, not a database\n");
  EXPECT_NE(open_error(d.file("text.sqlite")).find("not a Pipewright run database (not an SQLite file)"), std::string::npos);
  std::mt19937 rng(7);
  std::string junk(65536, '\0');
  for (auto& c : junk) c = static_cast<char>(rng());
  write_file(d.file("junk.sqlite"), junk);
  EXPECT_NE(open_error(d.file("junk.sqlite")).find("not an SQLite file"), std::string::npos);
  // SQLite's header followed by garbage.
  write_file(d.file("fake.sqlite"), std::string("SQLite format 3\0", 16) + junk);
  EXPECT_NE(open_error(d.file("fake.sqlite")), "");
}

TEST(RunDbErrors, TruncatedFile) {
  test::TempDir d;
  auto path = finished_run(d);
  auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 100000u);
  for (auto keep : {size / 2, size - 4096, std::uintmax_t(60)}) {
    std::filesystem::copy_file(path, d.file("cut.sqlite"), std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(d.file("cut.sqlite"), keep);
    auto msg = open_error(d.file("cut.sqlite"));
    EXPECT_NE(msg.find("truncated"), std::string::npos) << keep << " bytes: " << msg;
  }
}

TEST(RunDbErrors, DamagedPagesGiveAClearError) {
  test::TempDir d;
  auto path = finished_run(d);
  auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::mt19937 rng(1);
    for (std::uintmax_t off = 8192; off + 4096 < size; off += 16384) {
      f.seekp(static_cast<std::streamoff>(off));
      for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(rng()));
    }
  }
  auto msg = open_error(path);
  EXPECT_NE(msg, "");
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(RunDbErrors, NotAPipewrightRun) {
  test::TempDir d;
  {
    db::Connection c(d.file("other.sqlite"), db::Connection::Mode::Create);
    c.exec("CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  }
  EXPECT_NE(open_error(d.file("other.sqlite")).find("not a Pipewright run database (no meta table)"), std::string::npos);
}

TEST(RunDbErrors, NewerSchemaMajorIsRefused) {
  test::TempDir d;
  auto path = finished_run(d, 10);
  {
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("UPDATE meta SET value = '2' WHERE key = 'schema_major'; UPDATE meta SET value = '3' WHERE key = 'schema_minor';");
  }
  auto msg = open_error(path);
  EXPECT_NE(msg.find("schema 2.3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("upgrade pipewright"), std::string::npos) << msg;
  {
    db::Connection c(path, db::Connection::Mode::ReadWrite);
    c.exec("UPDATE meta SET value = '1' WHERE key = 'schema_major'; UPDATE meta SET value = '9' WHERE key = 'schema_minor';");
  }
  EXPECT_EQ(open_error(path), "") << "a newer minor version stays readable";
}

}  // namespace
}  // namespace pw
