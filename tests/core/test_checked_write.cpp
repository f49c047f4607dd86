// The checked writer and the output rule (core/io/checked_write.h): what a
// refused or failed write leaves behind, read back from the file system.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io/checked_write.h"
#include "output_rule_util.h"

namespace fs = std::filesystem;
using namespace pw;
using pw::test::put;
using pw::test::read;
using pw::test::refusal;

namespace {

int temporaries(const test::TempDir& d) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) n += e.path().extension() == ".tmp";
  return n;
}

const std::string kSqlite = std::string("SQLite format 3\0", 16) + "pages of a recorded run";

}  // namespace

TEST(OutputRule, ANewFileIsWrittenWholeWithNoTemporaryLeft) {
  test::TempDir d("pw-checked-write");
  write_output({d.file("a.json"), "--trace", false}, "{}\n");
  EXPECT_EQ(read(d.file("a.json")), "{}\n");
  EXPECT_EQ(temporaries(d), 0);
}

TEST(OutputRule, AnExistingFileNeedsOverwrite) {
  test::TempDir d("pw-checked-write");
  put(d.file("a.json"), "mine");
  std::string why = refusal([&] { write_output({d.file("a.json"), "--trace", false}, "new"); });
  EXPECT_NE(why.find("--trace"), std::string::npos) << why;
  EXPECT_NE(why.find("--overwrite"), std::string::npos) << why;
  EXPECT_EQ(read(d.file("a.json")), "mine");
  write_output({d.file("a.json"), "--trace", true}, "new");
  EXPECT_EQ(read(d.file("a.json")), "new");
  EXPECT_EQ(temporaries(d), 0);
}

TEST(OutputRule, AnSqliteFileIsNeverReplacedEvenWithOverwrite) {
  test::TempDir d("pw-checked-write");
  put(d.file("run.sqlite"), kSqlite);
  EXPECT_TRUE(is_sqlite_file(d.file("run.sqlite")));
  for (bool overwrite : {false, true}) {
    std::string why = refusal([&] { write_output({d.file("run.sqlite"), "-o", overwrite}, "text"); });
    EXPECT_NE(why.find("SQLite"), std::string::npos) << why;
    EXPECT_EQ(read(d.file("run.sqlite")), kSqlite);
  }
  // Also a stream, refused before it writes a byte.
  EXPECT_FALSE(refusal([&] { OutputStream s({d.file("run.sqlite"), "--chrome-trace", true}); }).empty());
  EXPECT_EQ(read(d.file("run.sqlite")), kSqlite);
  EXPECT_EQ(temporaries(d), 0);
}

TEST(OutputRule, OnlyARegularFileInAnExistingDirectory) {
  test::TempDir d("pw-checked-write");
  fs::create_directory(d.file("sub"));
  EXPECT_NE(refusal([&] { check_output({d.file("sub"), "--csv", true}); }).find("directory"), std::string::npos);
  EXPECT_NE(refusal([&] { check_output({d.file("none/a.json"), "--trace", true}); }).find("no directory"),
            std::string::npos);
  EXPECT_NE(refusal([&] { check_output({"/dev/null", "--trace", true}); }).find("not a regular file"),
            std::string::npos);
}

TEST(OutputRule, AFileAppearingWhileStreamingIsNotReplaced) {
  test::TempDir d("pw-checked-write");
  OutputStream s({d.file("t.json"), "--trace", false});
  s.stream() << "trace";
  put(d.file("t.json"), "written meanwhile");
  std::string why = refusal([&] { s.commit(); });
  EXPECT_NE(why.find("exists"), std::string::npos) << why;
  EXPECT_EQ(read(d.file("t.json")), "written meanwhile");
  EXPECT_EQ(temporaries(d), 0);
}

TEST(OutputRule, AStreamNotCommittedLeavesTheOldFile) {
  test::TempDir d("pw-checked-write");
  put(d.file("t.json"), "old");
  {
    OutputStream s({d.file("t.json"), "--trace", true});
    s.stream() << std::string(1 << 20, 'x');  // past the buffer: bytes reach the temporary file
  }
  EXPECT_EQ(read(d.file("t.json")), "old");
  EXPECT_EQ(temporaries(d), 0);
}

// A file-size limit stands for a full disk: the write fails part way.
TEST(OutputRule, AFailedWriteLeavesTheOldFileWhole) {
  test::TempDir d("pw-checked-write");
  put(d.file("t.json"), "old");
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  int err = 0, stream_err = 0;
  try {
    write_output({d.file("t.json"), "--trace", true}, std::string(1 << 16, 'x'));
  } catch (const WriteError& e) {
    err = e.error_number();
  }
  try {
    OutputStream s({d.file("t.json"), "--trace", true});
    s.stream() << std::string(1 << 18, 'y');
    s.commit();
  } catch (const WriteError& e) {
    stream_err = e.error_number();
  }
  try {
    write_file_atomically(d.file("t.json"), std::string(1 << 16, 'z'), "checkpoint");
  } catch (const WriteError&) {
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(err, EFBIG);
  EXPECT_EQ(stream_err, EFBIG);
  EXPECT_EQ(read(d.file("t.json")), "old");
  EXPECT_EQ(temporaries(d), 0);
}

TEST(CheckedWrite, ReplacesItsOwnFilesWithTheModeAskedFor) {
  test::TempDir d("pw-checked-write");
  put(d.file("k"), "old");
  write_file_atomically(d.file("k"), "secret", "key", 0600);
  EXPECT_EQ(read(d.file("k")), "secret");
  struct stat st {};
  ASSERT_EQ(stat(d.file("k").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(temporaries(d), 0);
  try {
    write_file_atomically(d.file("none/k"), "x", "key");
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const WriteError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("writing key"), std::string::npos) << e.what();
  }
}
