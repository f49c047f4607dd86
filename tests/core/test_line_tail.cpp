// The one tailer of worker output (core/events/line_tail.h): complete lines
// only, in order, across polls; a file started again (a worker truncating
// its log on opening, a second run into the same directory) is a new stream,
// not bytes skipped or the old run's lines again; a missing file is not yet there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/events/line_tail.h"

namespace pw {
namespace {

using Lines = std::vector<std::string>;

TEST(LineTail, CompleteLinesAcrossPollsAndARestartedFile) {
  const auto file = (std::filesystem::temp_directory_path() / ("pw-line-tail-" + std::to_string(::getpid()))).string();
  std::filesystem::remove(file);
  LineTail tail(file);
  EXPECT_EQ(tail.poll(), Lines{});  // not there yet
  {
    std::ofstream out(file);
    out << "one\ntw";
  }
  EXPECT_EQ(tail.poll(), Lines{"one"});
  {
    std::ofstream out(file, std::ios::app);
    out << "o\nthree\n";
  }
  EXPECT_EQ(tail.poll(), (Lines{"two", "three"}));
  EXPECT_EQ(tail.poll(), Lines{});
  {
    std::ofstream out(file, std::ios::trunc);  // started again, shorter than what was read
    out << "new\n";
  }
  EXPECT_EQ(tail.poll(), Lines{"new"});
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace pw
